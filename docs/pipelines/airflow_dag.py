"""A nightly upload split over four mapped Airflow tasks (dynamic task mapping over the shard index).

Each task runs `track upload --shard auto/4` with TRACK_SHARD_INDEX set to its 0-based index, in a
folder every worker can reach, so a retried task resumes its own shard (--resume-or-start) from its
journal and delta state; each shard's rejected rows are in its own users.shard-K-of-4.rejects.ndjson
there. A task is retried only when a retry can change the outcome: not when track exits 1 (rows were
rejected: the retry would resume a finished run and send nothing again) or 2 (a usage or
configuration error: it would be refused again). All four draw from one rate budget in Redis
(TRACK_RATE_STORE in the workers' environment); the report task adds their summaries into one
verdict, and fails the run when a shard failed or is missing.
"""
import os
import subprocess

import pendulum
from airflow.decorators import dag, task
from airflow.exceptions import AirflowException, AirflowFailException
from airflow.operators.bash import BashOperator

SHARDS = 4
RECORDS = "/data/track"
EXPORT = "s3://acme-warehouse/exports/users/"
UPLOAD = (
    'track upload "$EXPORT" --shard auto/4 --delta --resume-or-start '
    '--summary-file "summary-$TRACK_SHARD_INDEX.json"'
)
REPORT = "track report summary-*.json"
# track's exit statuses that a retry cannot change; 3 (a fatal stop: the server unreachable, its
# retries spent) and 130 (stopped by a signal) are retried, and the retry resumes the shard
NOT_RETRIED = {
    1: "rows were rejected: they are in this shard's rejects file, with their reasons",
    2: "a usage or configuration error: see the message above",
}


@task(retries=3)
def upload(index: int) -> None:
    env = {**os.environ, "TRACK_SHARD_INDEX": str(index), "EXPORT": EXPORT}
    status = subprocess.run(["bash", "-c", UPLOAD], cwd=RECORDS, env=env).returncode
    if status in NOT_RETRIED:
        raise AirflowFailException(f"track upload exited {status}: {NOT_RETRIED[status]}")
    if status != 0:
        raise AirflowException(f"track upload exited {status}; a retry resumes the shard")


@dag(schedule="0 2 * * *", start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False)
def track_nightly_users():
    uploads = upload.expand(index=list(range(SHARDS)))
    report = BashOperator(task_id="report", bash_command=REPORT, cwd=RECORDS, trigger_rule="all_done")
    uploads >> report


track_nightly_users()
