"""Print the GPUs Spark's driver was given: the addresses its resource
discovery script (atom gpus --spark) named."""
from pyspark.sql import SparkSession

spark = SparkSession.builder.appName("gpus").getOrCreate()
gpu = spark.sparkContext.resources.get("gpu")
print("driver gpus:", ",".join(gpu.addresses) if gpu else "none", flush=True)
spark.stop()
