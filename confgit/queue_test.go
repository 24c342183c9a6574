package confgit

import (
	"errors"
	"strings"
	"testing"
)

const dayItem = `{"cron": "0 6 * * *", "dst_fixes": ["skip", "repeat_use_only_early"], "timezone": "UTC",
	"max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`

func TestParseQueues(t *testing.T) {
	cfg := mustParse(t, map[string]string{
		ConfFile: `[
			{"type": "queue", "name": "heavy", "threads": 2, "sort": "fifo",
			 "threads-schedule": [{"schedule": ` + dayItem + `, "threads": 1}]},
			{"type": "queue", "name": "free", "threads": null},
			{"type": "lorries", "prefix": "p", "globs": ["*.lorry"], "queue": "heavy"},
			{"type": "lorries", "prefix": "q", "globs": ["*.lorry"]},
			{"type": "gitlab", "host": "gitlab.example.com", "queue": "free"}
		]`,
		"a.lorry": `{"x": {"type": "git", "url": "u"}}`,
	})
	if len(cfg.Queues) != 2 {
		t.Fatalf("got %d queues; want 2", len(cfg.Queues))
	}
	heavy, free := cfg.Queues[0], cfg.Queues[1]
	if heavy.Name != "heavy" || heavy.Threads == nil || *heavy.Threads != 2 || heavy.Sort != "fifo" ||
		!strings.Contains(heavy.Schedule, `"threads":1`) {
		t.Errorf("heavy: got %+v", heavy)
	}
	if free.Name != "free" || free.Threads != nil || free.Sort != "queue-order" || free.Schedule != "" {
		t.Errorf("free: got %+v; want no limit, queue-order, no schedule", free)
	}
	if got := findLorry(t, cfg, "p/x").Queue; got != "heavy" {
		t.Errorf("p/x in queue %q; want heavy", got)
	}
	if got := findLorry(t, cfg, "q/x").Queue; got != DefaultQueue {
		t.Errorf("q/x in queue %q; want %s", got, DefaultQueue)
	}
	if got := cfg.Hosts[0].Queue; got != "free" {
		t.Errorf("host in queue %q; want free", got)
	}
}

func TestParseDefaultQueueSection(t *testing.T) {
	cfg := mustParse(t, map[string]string{ConfFile: `[{"type": "queue", "name": "default", "threads": 4},
		{"type": "lorries", "prefix": "p", "globs": [], "queue": "default"}]`})
	if len(cfg.Queues) != 1 || *cfg.Queues[0].Threads != 4 {
		t.Errorf("got %+v; want the default queue with 4 threads", cfg.Queues)
	}
}

func TestParseBrokenQueues(t *testing.T) {
	tests := []struct {
		name        string
		conf        string
		wantSection int
		wantKey     string
		wantErr     string
	}{
		{name: "no name", conf: `[{"type": "queue"}]`, wantKey: "name", wantErr: "missing"},
		{name: "empty name", conf: `[{"type": "queue", "name": ""}]`, wantKey: "name", wantErr: "empty"},
		{name: "unknown sort", conf: `[{"type": "queue", "name": "q", "sort": "random"}]`, wantKey: "sort", wantErr: `not "random"`},
		{name: "negative threads", conf: `[{"type": "queue", "name": "q", "threads": -1}]`, wantKey: "threads", wantErr: "from 0"},
		{name: "fractional threads", conf: `[{"type": "queue", "name": "q", "threads": 1.5}]`, wantKey: "threads", wantErr: "whole number"},
		{name: "threads a string", conf: `[{"type": "queue", "name": "q", "threads": "2"}]`, wantKey: "threads", wantErr: "not a string"},
		{name: "duplicate name", conf: `[{"type": "queue", "name": "q"}, {"type": "queue", "name": "q"}]`, wantSection: 1, wantKey: "name", wantErr: "already configured by section [0]"},
		{name: "schedule not a list", conf: `[{"type": "queue", "name": "q", "threads-schedule": {}}]`, wantKey: "threads-schedule", wantErr: "must be a list"},
		{name: "schedule entry without threads", conf: `[{"type": "queue", "name": "q", "threads-schedule": [{"schedule": ` + dayItem + `}]}]`, wantKey: "threads-schedule", wantErr: "threads: missing"},
		{name: "schedule entry with bad threads", conf: `[{"type": "queue", "name": "q", "threads-schedule": [{"schedule": ` + dayItem + `, "threads": -2}]}]`, wantKey: "threads-schedule", wantErr: "item [0]: threads"},
		{name: "schedule without dst_fixes", conf: `[{"type": "queue", "name": "q", "threads-schedule": [{"schedule": {"minute": 0, "hour": 6, "max_shift_seconds_for_unskip_and_do_not_repeat": 60}, "threads": 1}]}]`, wantKey: "threads-schedule", wantErr: "dst_fixes"},
		{name: "schedule entry unknown key", conf: `[{"type": "queue", "name": "q", "threads-schedule": [{"schedule": ` + dayItem + `, "threads": 1, "thread": 2}]}]`, wantKey: "threads-schedule", wantErr: `unknown key "thread"`},
		{name: "lorries in unknown queue", conf: `[{"type": "queue", "name": "q"}, {"type": "lorries", "prefix": "p", "globs": [], "queue": "heavy"}]`, wantSection: 1, wantKey: "queue", wantErr: `no queue section is named "heavy"`},
		{name: "scrapers in unknown queue", conf: `[{"type": "scrapers", "prefix": "p", "globs": [], "queue": "heavy"}]`, wantKey: "queue", wantErr: `"heavy"`},
		{name: "host in unknown queue", conf: `[{"type": "gitlab", "host": "h", "queue": "heavy"}]`, wantKey: "queue", wantErr: `"heavy"`},
		{name: "queue not a string", conf: `[{"type": "lorries", "prefix": "p", "globs": [], "queue": 1}]`, wantKey: "queue", wantErr: "must be the name of a queue"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse(mapFS(map[string]string{ConfFile: tc.conf}))
			if err == nil {
				t.Fatalf("Parse = %+v, nil; want an error containing %q", cfg, tc.wantErr)
			}
			var ce *ConfError
			if !errors.Is(err, ErrBadConf) || !errors.As(err, &ce) {
				t.Fatalf("error %v (%T) is not a *ConfError", err, err)
			}
			if ce.Section != tc.wantSection || ce.Key != tc.wantKey {
				t.Errorf("got section %d key %q, want section %d key %q (%v)", ce.Section, ce.Key, tc.wantSection, tc.wantKey, err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got error %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
