"""One run of an exactly-once wordcount on Kafka, for tests/kafka/test_exactly_once_kafka.py
(which SIGKILLs it at random points): ``python eos_wordcount_run.py BOOTSTRAP APP_ID
SOURCE_TOPIC WORKDIR``. Prints ``done`` when everything available is processed."""
import sys

from streamlib import Streams, StreamsConfig
from streamlib.spark.session import get_or_create_session
from engine import wordcount_topology

bootstrap, app_id, source, workdir = sys.argv[1:5]
spark = get_or_create_session("local[2]", "eos-run", {"spark.sql.shuffle.partitions": "2",
                                                       "spark.ui.enabled": "false"})
spark.sparkContext.setLogLevel("ERROR")
config = StreamsConfig(application_id=app_id, bootstrap=f"kafka://{bootstrap}",
                       state_dir=f"{workdir}/state", checkpoint_location=f"{workdir}/checkpoint",
                       processing_guarantee="exactly_once", max_records_per_batch=40,
                       num_partitions=2)
Streams(wordcount_topology(source=source, output=f"{source}-counts"), config, spark=spark).process_available()
print("done", flush=True)
