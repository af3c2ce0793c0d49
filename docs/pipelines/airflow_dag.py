"""A nightly upload split over four mapped Airflow tasks (dynamic task mapping over the shard index).

Each task runs `track upload --shard auto/4` with TRACK_SHARD_INDEX set to its 0-based index, in a
folder every worker can reach, so a retried task resumes its own shard (--resume-or-start) from its
journal and delta state; each shard's rejected rows are in its own users.shard-K-of-4.rejects.ndjson
there. All four draw from one rate budget in Redis (TRACK_RATE_STORE in the
workers' environment); the report task adds their summaries into one verdict, and fails the run
when a shard failed or is missing.
"""
import pendulum
from airflow.decorators import dag
from airflow.operators.bash import BashOperator

SHARDS = 4
RECORDS = "/data/track"
EXPORT = "s3://acme-warehouse/exports/users/"
UPLOAD = (
    'track upload "$EXPORT" --shard auto/4 --delta --resume-or-start '
    '--summary-file "summary-$TRACK_SHARD_INDEX.json"'
)
REPORT = "track report summary-*.json"


@dag(schedule="0 2 * * *", start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False)
def track_nightly_users():
    upload = BashOperator.partial(
        task_id="upload",
        bash_command=UPLOAD,
        cwd=RECORDS,
        append_env=True,
        retries=3,
    ).expand(env=[{"TRACK_SHARD_INDEX": str(index), "EXPORT": EXPORT} for index in range(SHARDS)])
    report = BashOperator(task_id="report", bash_command=REPORT, cwd=RECORDS, trigger_rule="all_done")
    upload >> report


track_nightly_users()
