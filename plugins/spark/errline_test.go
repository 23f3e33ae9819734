package spark

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// What failed drivers print, and the line that says why.
func TestErrorLine(t *testing.T) {
	t.Parallel()
	const pyTrace = "Traceback (most recent call last):\n" +
		"  File \"/jobs/clean.py\", line 12, in <module>\n" +
		"    df = spark.read.parquet(src)\n" +
		"         ^^^^^^^^^^^^^^^^^^^^^^^\n" +
		"  File \"/venv/lib/python3.11/site-packages/pyspark/errors/exceptions/captured.py\", line 288, in deco\n" +
		"    raise converted from None\n" +
		"pyspark.errors.exceptions.captured.AnalysisException: [PATH_NOT_FOUND] Path does not exist: file:/data/missing. SQLSTATE: 42K03\n"
	cases := []struct {
		name           string
		stdout, stderr string
		want           string
	}{
		{"a PySpark exception, on stdout, after Spark's INFO and WARN lines on stderr", "rows: 0\n" + pyTrace,
			"26/12/03 11:27:20 WARN Utils: Your hostname, vm, resolves to a loopback address\n26/12/03 11:27:21 INFO SparkContext: Running Spark version 4.3.0\n",
			"pyspark.errors.exceptions.captured.AnalysisException: [PATH_NOT_FOUND] Path does not exist: file:/data/missing. SQLSTATE: 42K03"},
		{"a plain Python exception", "Traceback (most recent call last):\n  File \"/a.py\", line 3, in <module>\n    1/0\nZeroDivisionError: division by zero\n", "",
			"ZeroDivisionError: division by zero"},
		{"a JVM application's uncaught exception", "",
			"26/12/03 11:27:22 ERROR Executor: Exception in task 0.0 in stage 0.0 (TID 0)\njava.lang.ArithmeticException: / by zero\n" +
				"Exception in thread \"main\" org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 0.0 failed 1 times\n" +
				"\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2856)\n",
			"Exception in thread \"main\" org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 0.0 failed 1 times"},
		{"spark-submit's own refusal", "", "Error: Failed to load class org.example.Missing.\n", "Error: Failed to load class org.example.Missing."},
		{"no strong line: the first ERROR log line", "",
			"26/12/03 11:27:22 INFO X: fine\n26/12/03 11:27:23 ERROR SparkContext: Error initializing SparkContext.\n26/12/03 11:27:23 ERROR Other: later\n",
			"26/12/03 11:27:23 ERROR SparkContext: Error initializing SparkContext."},
		{"a Python syntax error, which has no traceback header",
			"  File \"/a.py\", line 1\n    def (\n        ^\nSyntaxError: invalid syntax\n", "", "SyntaxError: invalid syntax"},
		{"a Python main file that is not there", "26/12/04 03:20:11 INFO ShutdownHookManager: Shutdown hook called\n",
			"/venv/bin/python3: can't open file '/tmp/missing.py': [Errno 2] No such file or directory\n",
			"/venv/bin/python3: can't open file '/tmp/missing.py': [Errno 2] No such file or directory"},
		{"nothing that says why", "done\n", "26/12/03 11:27:22 INFO X: bye\n", ""},
	}
	for _, tc := range cases {
		var e ErrorLine
		out, errw := e.Stream(), e.Stream()
		// Written in pieces that split lines, as pipes deliver them.
		for _, w := range []struct {
			s  *ErrorStream
			in string
		}{{errw, tc.stderr}, {out, tc.stdout}} {
			for i := 0; i < len(w.in); i += 7 {
				_, _ = w.s.Write([]byte(w.in[i:min(i+7, len(w.in))]))
			}
		}
		assert.Equal(t, tc.want, e.Reason(), tc.name)
	}

	// A long line is cut, whole runes kept; a line past maxLine is not
	// looked at.
	var e ErrorLine
	s := e.Stream()
	_, _ = s.Write([]byte("Exception in thread \"main\" " + strings.Repeat("x", maxLine) + "\n"))
	assert.Equal(t, "", e.Reason())
	_, _ = s.Write([]byte("Exception in thread \"main\" java.lang.IllegalStateException: " + strings.Repeat("é", 200) + "\n"))
	r := e.Reason()
	assert.LessOrEqual(t, len(r), MaxReason+3)
	assert.True(t, strings.HasPrefix(r, "Exception in thread \"main\" java.lang.IllegalStateException: éé"))
	assert.True(t, strings.HasSuffix(r, "é..."), r)
}
