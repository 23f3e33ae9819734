package spark

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// MaxReason is the most bytes of an error line a failed driver's reason
// keeps; a longer line is cut, with "..." after it.
const MaxReason = 240

// maxLine: longer output lines are not looked at (no error line is).
const maxLine = 16 << 10

// ErrorLine finds the line that says why a Spark driver failed in what it
// writes: the line of the first of these to come,
//   - `Exception in thread "main" ...`: a JVM application's uncaught
//     exception, as the JVM prints it;
//   - the exception line that ends a Python traceback (the first line at
//     the margin after `Traceback (most recent call last):`), such as
//     `pyspark.errors.exceptions.captured.AnalysisException: [PATH_NOT_FOUND]
//     Path does not exist: ...`: PySpark's driver writes tracebacks on
//     spark-submit's stdout (Spark merges the Python process's stderr
//     into it);
//   - `Error: ...`, spark-submit's own refusals (a bad option, a main
//     class it cannot load);
//   - `python3: can't open file '...': [Errno 2] ...`, a Python main file
//     that is not there;
//
// and, when none came, the first of the weaker ones: an exception line
// at the margin (`java.lang.OutOfMemoryError: ...`, `SyntaxError: ...`),
// or a log line at level ERROR. Feed each stream its own Stream writer, so
// their lines do not mix. It is safe for concurrent use.
type ErrorLine struct {
	mu     sync.Mutex
	strong string // the first strong line
	weak   string // the first weak line
}

// Stream returns a writer for one of the driver's output streams.
func (e *ErrorLine) Stream() *ErrorStream { return &ErrorStream{e: e} }

// Reason returns the error line found, at most MaxReason bytes; "" when
// none was.
func (e *ErrorLine) Reason() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.strong != "" {
		return e.strong
	}
	return e.weak
}

// ErrorStream reads one stream's lines for its ErrorLine.
type ErrorStream struct {
	e       *ErrorLine
	line    []byte
	long    bool // the current line passed maxLine
	inTrace bool // inside a Python traceback
}

var (
	jvmMain   = regexp.MustCompile(`^Exception in thread "main" \S`)
	submitErr = regexp.MustCompile(`^Error: \S`)
	// Python's refusal of a main file it cannot read:
	// "python3: can't open file '/jobs/clean.py': [Errno 2] No such file or directory".
	pyNoFile = regexp.MustCompile(`^\S*python[\d.]*: can't open file `)
	// An exception's class and message at the margin: Java's dotted class
	// names, Python's names (which may be dotted too).
	exceptionLine = regexp.MustCompile(`^([A-Za-z_$][\w$]*\.)*[A-Za-z_$][\w$]*(Exception|Error|Exit|Interrupt)(: .*)?$`)
	// log4j's default pattern: "26/12/03 11:29:13 ERROR SparkContext: ..."
	logError = regexp.MustCompile(`^\d\d/\d\d/\d\d \d\d:\d\d:\d\d ERROR \S`)
)

// Write implements io.Writer; it never fails.
func (s *ErrorStream) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if len(s.line)+len(chunk) > maxLine {
			s.long = true
		} else if !s.long {
			s.line = append(s.line, chunk...)
		}
		if i < 0 {
			break
		}
		if !s.long {
			s.scan(strings.TrimRight(string(s.line), " \t\r"))
		}
		s.line, s.long, p = s.line[:0], false, p[i+1:]
	}
	return n, nil
}

// scan looks at one whole line.
func (s *ErrorStream) scan(line string) {
	switch {
	case line == "Traceback (most recent call last):":
		s.inTrace = true
		return
	case s.inTrace && (line == "" || line[0] == ' ' || line[0] == '\t'):
		return // a frame, its source line, or ^^^ marks
	case s.inTrace:
		s.inTrace = false
		s.e.found(line, true)
		return
	}
	switch {
	case jvmMain.MatchString(line), submitErr.MatchString(line), pyNoFile.MatchString(line):
		s.e.found(line, true)
	case exceptionLine.MatchString(line), logError.MatchString(line):
		s.e.found(line, false)
	}
}

// found keeps line if it is the first of its kind.
func (e *ErrorLine) found(line string, strong bool) {
	line = cut(line)
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case strong && e.strong == "":
		e.strong = line
	case !strong && e.weak == "":
		e.weak = line
	}
}

// cut shortens line to MaxReason bytes, on a rune boundary.
func cut(line string) string {
	line = strings.ToValidUTF8(line, "?")
	if len(line) <= MaxReason {
		return line
	}
	i := MaxReason
	for i > 0 && !utf8.RuneStart(line[i]) {
		i--
	}
	return line[:i] + "..."
}
