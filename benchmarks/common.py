"""What the side-by-side benchmarks share: the Spark session both engines run in."""
from __future__ import annotations

from pyspark.sql import SparkSession

from streamlib.spark.session import register_data_sources

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def bench_session(app_name: str, partitions: int = 4) -> SparkSession:
    """``local[2]``, ``partitions`` shuffle partitions, Spark's RocksDB state store
    provider (what a Spark user picks for large state), no UI, errors-only logging,
    the ``streamlib`` data source registered."""
    spark = (SparkSession.builder.master("local[2]").appName(app_name)
             .config("spark.sql.shuffle.partitions", str(partitions)).config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register_data_sources(spark)  # format("streamlib") for Spark's own queries too
    return spark
