"""Sum the squares below N on Spark's executors, in Python workers there,
and name the executors that ran the tasks (their Pods' host names).

    spark-submit squares.py N [SLEEP_SECONDS]

With SLEEP_SECONDS each task sleeps that long first: a job that holds
its executors busy.
"""
import socket
import sys
import time

from pyspark.sql import SparkSession

n = int(sys.argv[1])
pause = float(sys.argv[2]) if len(sys.argv) > 2 else 0


def square(x):
    if pause:
        time.sleep(pause)
    return x * x


spark = SparkSession.builder.appName("squares").getOrCreate()
sc = spark.sparkContext
rdd = sc.parallelize(range(n), 8)
total = rdd.map(square).sum()
hosts = sorted(set(rdd.map(lambda _: socket.gethostname()).collect()))
print(f"squares: the sum of the squares below {n} is {total}", flush=True)
print(f"squares: tasks ran on {' '.join(hosts)}", flush=True)
spark.stop()
