import { describe, expect, it } from 'vitest';
import { withoutSignature } from '../../src/input/location.js';

describe('withoutSignature', () => {
  it('leaves out the parameters that sign S3, GCS, CloudFront and Azure URLs, and keeps the others', () => {
    const s3 =
      'https://b.s3.amazonaws.com/exports/users.csv?version=3&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F20240101&X-Amz-Date=20240101T000000Z&X-Amz-Expires=600&X-Amz-SignedHeaders=host&x-id=GetObject&X-Amz-Signature=abc';
    expect(withoutSignature(s3)).toBe('https://b.s3.amazonaws.com/exports/users.csv?version=3');
    expect(withoutSignature('https://storage.googleapis.com/b/u.parquet?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=x&X-Goog-Date=d&X-Goog-Expires=60&X-Goog-SignedHeaders=host&X-Goog-Signature=ff')).toBe(
      'https://storage.googleapis.com/b/u.parquet',
    );
    expect(withoutSignature('https://d111.cloudfront.net/u.csv?Expires=1&Signature=s&Key-Pair-Id=K')).toBe('https://d111.cloudfront.net/u.csv');
    expect(withoutSignature('https://a.blob.core.windows.net/c/u.csv?sv=2022-11-02&ss=b&sp=r&se=2024-01-01&sig=xyz%3D')).toBe('https://a.blob.core.windows.net/c/u.csv');
  });

  it('changes no URL that is not signed, whatever its parameters are called', () => {
    for (const url of ['https://example.com/export?id=1&sp=2&expires=3', 'http://127.0.0.1:9000/b/users.csv', 'not a url']) expect(withoutSignature(url)).toBe(url);
  });
});
