package journallog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestNewFor(t *testing.T) {
	tests := []struct {
		name     string
		journald bool
		want     []string // line prefixes, in order
	}{
		{name: "terminal or file", journald: false, want: []string{"time=", "time=", "time="}},
		{name: "journal", journald: true, want: []string{
			`<6>level=INFO msg=started n=1`,
			`<4>level=WARN msg="running low" minion=m1`,
			`<3>level=ERROR msg=failed minion=m1 err=boom`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := NewFor(&buf, slog.LevelInfo, tc.journald)
			log.Info("started", "n", 1)
			log.Debug("not shown")
			m := log.With("minion", "m1")
			m.Warn("running low")
			m.Error("failed", "err", "boom")
			lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("got %d lines %q; want %d", len(lines), lines, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("line %d = %q; want it to start with %q", i, lines[i], w)
				}
				if tc.journald && strings.Contains(lines[i], "time=") {
					t.Errorf("line %d = %q carries a timestamp under the journal", i, lines[i])
				}
			}
		})
	}
}

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{"debug": slog.LevelDebug, "INFO": slog.LevelInfo,
		"warn": slog.LevelWarn, "warning": slog.LevelWarn, "error": slog.LevelError, "critical": slog.LevelError} {
		if got, err := ParseLevel(in); err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseLevel("loud"); err == nil {
		t.Error("ParseLevel(loud) passed; want an error")
	}
}
