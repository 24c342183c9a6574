// Package journallog builds the programs' loggers: log/slog text lines on
// standard error. Under systemd, standard error goes to the journal, which
// stamps every line with the time itself and reads a leading "<N>" as the
// line's syslog priority; there the lines carry no timestamp of their own
// and start with their priority, so that journalctl -p filters by level.
package journallog

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/coreos/go-systemd/v22/journal"
)

// New returns a text logger writing to stderr at the given level, in the
// journal's form when stderr is the journal (JOURNAL_STREAM names it).
func New(level slog.Leveler) *slog.Logger {
	under, err := journal.StderrIsJournalStream()
	return NewFor(os.Stderr, level, under && err == nil)
}

// NewFor returns a text logger writing to w; if journald, in the journal's
// form.
func NewFor(w io.Writer, level slog.Leveler, journald bool) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if !journald {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	return slog.New(slog.NewTextHandler(priorityWriter{w}, opts))
}

// priorityWriter puts the syslog priority in front of each line. The text
// handler writes each record in one call, starting with its level, since
// the time is left out.
type priorityWriter struct{ w io.Writer }

func (pw priorityWriter) Write(p []byte) (int, error) {
	prio := "<6>"
	switch {
	case bytes.HasPrefix(p, []byte("level=ERROR")):
		prio = "<3>"
	case bytes.HasPrefix(p, []byte("level=WARN")):
		prio = "<4>"
	case bytes.HasPrefix(p, []byte("level=DEBUG")):
		prio = "<7>"
	}
	if _, err := pw.w.Write(append([]byte(prio), p...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// LevelNames is what ParseLevel takes, for --help texts.
const LevelNames = "debug, info, warn or error"

// ParseLevel reads a --log-level: debug, info, warn or error in any case,
// and the original Python programs' names warning, critical and fatal.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "warning":
		return slog.LevelWarn, nil
	case "critical", "fatal":
		return slog.LevelError, nil
	}
	var l slog.Level
	err := l.UnmarshalText([]byte(s))
	return l, err
}
