// s3rver ships no types: the part of its API the tests use.
declare module 's3rver' {
  export default class S3rver {
    constructor(options: { port?: number; address?: string; silent?: boolean; directory: string; resetOnClose?: boolean });
    run(): Promise<{ port: number; address: string }>;
    close(): Promise<void>;
  }
}
