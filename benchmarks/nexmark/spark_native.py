"""Nexmark q0-q8 as a Spark user writes them: Structured Streaming DataFrames reading
the same topics through streamlib's data source (``format("streamlib")``) and writing
their results to a topic of the same log (string key, JSON value), so that both
engines' outputs are read and checked the same way.

Two queries are not one Structured Streaming query, and have no native version here:

- q4: the average per category of per-auction maxima is an aggregation of an
  aggregation over a stream-stream join; Spark runs a stream-stream join only in
  append mode and chains stateful operators only in append mode with event-time
  windows and watermarks, so the non-windowed q4 has no plan.
- q6: closing auctions at their expiry needs timers; the DataFrame API has none (only
  ``applyInPandasWithState``/``transformWithState``, arbitrary stateful processing that
  is not the DataFrame/SQL query this comparison is about).
"""
from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from queries import WINDOW_MS

LONG, STRING = LongType(), StringType()
SCHEMAS = {
    "person": StructType([StructField(n, STRING) for n in ("name", "emailAddress", "creditCard", "city", "state")]
                         + [StructField("id", LONG), StructField("dateTime", LONG)]),
    "auction": StructType([StructField(n, LONG) for n in ("id", "initialBid", "reserve", "dateTime", "expires",
                                                           "seller", "category")]
                          + [StructField(n, STRING) for n in ("itemName", "description")]),
    "bid": StructType([StructField(n, LONG) for n in ("auction", "bidder", "price", "dateTime")]),
}


def read(spark: SparkSession, bootstrap: str, topic: str, max_records: int | None) -> DataFrame:
    """``topic``'s JSON values as columns, plus ``ts`` (the event time as a timestamp)."""
    reader = spark.readStream.format("streamlib").option("bootstrap", bootstrap).option("topics", topic)
    if max_records:
        reader = reader.option("maxRecordsPerTrigger", str(max_records))
    rows = reader.load().select(F.from_json(F.col("value").cast("string"), SCHEMAS[topic]).alias("e"))
    return rows.select("e.*").withColumn("ts", F.timestamp_millis("dateTime"))


def _out(key: Column, *fields: Column) -> list[Column]:
    return [key.cast("string").alias("key"), F.to_json(F.struct(*fields)).alias("value")]


def _window_start(column: str = "window") -> Column:
    return F.unix_millis(F.col(f"{column}.start"))


def q0(r):
    bid = r("bid")
    return bid.select(*_out(F.col("auction"), "auction", "bidder", "price", "dateTime")), "append"


def q1(r):
    bid = r("bid")
    euro = F.expr("(price * 908) div 1000")
    return bid.select(*_out(F.col("auction"), "auction", "bidder", euro.alias("price"), "dateTime")), "append"


def q2(r):
    bid = r("bid").where(F.col("auction") % 123 == 0)
    return bid.select(*_out(F.col("auction"), "auction", "price")), "append"


def q3(r):
    auction = r("auction").where("category = 10").alias("a")
    person = r("person").where(F.col("state").isin("OR", "ID", "CA")).alias("p")
    joined = auction.join(person, F.col("a.seller") == F.col("p.id"))
    return joined.select(*_out(F.col("a.id"), "p.name", "p.city", "p.state", F.col("a.id").alias("id"))), "append"


def q5(r):
    counts = (r("bid").withWatermark("ts", "0 seconds")
              .groupBy(F.window("ts", "10 seconds", "2 seconds"), "auction").count())
    # chained window aggregation (Spark >= 3.4): each 10 s window ends in its own 2 s window
    hottest = (counts.groupBy(F.window(F.window_time("window"), "2 seconds").alias("hop"))
               .agg(F.max(F.struct(F.col("count").alias("num"), "auction")).alias("top")))
    start = F.unix_millis(F.col("hop.end")) - WINDOW_MS
    return hottest.select(*_out(start, F.col("top.auction").alias("auction"),
                                F.col("top.num").alias("num"))), "append"


def q7(r):
    highest = (r("bid").withWatermark("ts", "0 seconds").groupBy(F.window("ts", "10 seconds"))
               .agg(F.max(F.struct("price", "bidder", "auction", "dateTime")).alias("top")))
    return highest.select(*_out(_window_start(), "top.auction", "top.bidder", "top.price", "top.dateTime")), "append"


def q8(r):
    person = r("person").alias("p")
    auction = r("auction").alias("a")
    start = F.col("p.dateTime") - F.col("p.dateTime") % WINDOW_MS
    joined = person.join(auction, (F.col("p.id") == F.col("a.seller"))
                         & (start == F.col("a.dateTime") - F.col("a.dateTime") % WINDOW_MS))
    return joined.select(*_out(F.col("p.id"), F.col("p.id").alias("id"), "p.name", start.alias("start"))), "append"


#: query name -> fn(read) -> (DataFrame of key/value, output mode); q4 and q6: see the module docstring
QUERIES = {"q0": q0, "q1": q1, "q2": q2, "q3": q3, "q5": q5, "q7": q7, "q8": q8}


def start(spark: SparkSession, query: str, bootstrap: str, out_topic: str, checkpoint: str,
          max_records: int | None = None):
    """Start ``query`` writing to ``out_topic``; returns the running ``StreamingQuery``."""
    frame, mode = QUERIES[query](lambda topic: read(spark, bootstrap, topic, max_records))
    return (frame.writeStream.format("streamlib").option("bootstrap", bootstrap).option("topic", out_topic)
            .option("checkpointLocation", checkpoint).outputMode(mode).trigger(processingTime="0 seconds")
            .start())
