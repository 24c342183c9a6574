package confgit

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/wire"
)

// nightItem is a schedule with its keys out of order, to check that the
// stored text is canonical.
const nightItem = `{"timezone": "UTC", "minute": 0, "hour": 3, "dst_fixes": ["unskip", "repeat_use_only_early"],
	"max_shift_seconds_for_unskip_and_do_not_repeat": 3600}`

const nightText = `{"dst_fixes":["unskip","repeat_use_only_early"],"hour":3,"max_shift_seconds_for_unskip_and_do_not_repeat":3600,"minute":0,"timezone":"UTC"}`

// TestParseSchedules checks that a section's schedule applies to its
// specs, that a spec's own replaces it, and that both are kept as
// canonical text beside the parsed item.
func TestParseSchedules(t *testing.T) {
	cfg := mustParse(t, map[string]string{
		ConfFile: `[{"type": "lorries", "prefix": "night", "globs": ["night.lorry"], "schedule": ` + nightItem + `},
			{"type": "lorries", "prefix": "plain", "globs": ["plain.lorry"], "interval": "2h"}]`,
		"night.lorry": `{"a": {"type": "git", "url": "u"},
			"b": {"type": "git", "url": "u", "schedule": {"cron": "*/5 * * * *", "dst_fixes": ["skip", "repeat_use_both"],
				"timezone": "UTC", "max_shift_seconds_for_unskip_and_do_not_repeat": 60}}}`,
		"plain.lorry": "c:\n  type: git\n  url: u\n  schedule:\n    epoch: {period: 300}\n    max_shift_seconds_for_unskip_and_do_not_repeat: 600\n" +
			"d:\n  type: git\n  url: u\n",
	})
	if len(cfg.Errors) != 0 {
		t.Fatalf("got errors %v, want none", cfg.Errors)
	}
	tests := []struct {
		path, want string
	}{
		{path: "night/a", want: nightText},
		{path: "night/b", want: `{"cron":"*/5 * * * *","dst_fixes":["skip","repeat_use_both"],"max_shift_seconds_for_unskip_and_do_not_repeat":60,"timezone":"UTC"}`},
		{path: "plain/c", want: `{"epoch":{"period":300},"max_shift_seconds_for_unskip_and_do_not_repeat":600}`},
		{path: "plain/d", want: ""},
	}
	for _, tc := range tests {
		l := findLorry(t, cfg, tc.path)
		if l.Schedule != tc.want {
			t.Errorf("%s: got schedule %s, want %s", tc.path, l.Schedule, tc.want)
		}
		if got := l.Cron != nil; got != (tc.want != "") {
			t.Errorf("%s: got parsed item %v, want one only with a schedule", tc.path, got)
		}
	}
	// 2013-11-03 02:00:00 UTC: the night item fires at 03:00 that day.
	if got, ok := findLorry(t, cfg, "night/a").Cron.FirstMatch(1383444000); !ok || got != 1383447600 {
		t.Errorf("night/a: first event after 02:00 is %d, %v; want 1383447600 (03:00 UTC)", got, ok)
	}
	if got := findLorry(t, cfg, "plain/d").Interval.Hours(); got != 2 {
		t.Errorf("plain/d: got interval %vh, want the section's 2h", got)
	}
}

// TestParseBrokenSectionSchedule checks that a bad schedule of a section
// breaks the configuration, naming the section and the key.
func TestParseBrokenSectionSchedule(t *testing.T) {
	tests := []struct {
		name     string
		schedule string
		wantErr  string
	}{
		{name: "not an object", schedule: `"0 3 * * *"`, wantErr: "must be an object, not a string"},
		{name: "no dst_fixes", schedule: `{"minute": 0, "max_shift_seconds_for_unskip_and_do_not_repeat": 60}`, wantErr: "dst_fixes"},
		{name: "no max shift", schedule: `{"minute": 0, "dst_fixes": ["skip", "repeat_use_both"]}`, wantErr: "max_shift_seconds_for_unskip_and_do_not_repeat"},
		{name: "max shift too small", schedule: `{"epoch": {"period": 60}, "max_shift_seconds_for_unskip_and_do_not_repeat": 59}`, wantErr: "60"},
		{name: "minute out of range", schedule: `{"minute": 60, "dst_fixes": ["skip", "repeat_use_both"], "max_shift_seconds_for_unskip_and_do_not_repeat": 60}`, wantErr: "minute"},
		{name: "unknown key", schedule: `{"minute": 0, "hours": 3, "dst_fixes": ["skip", "repeat_use_both"], "max_shift_seconds_for_unskip_and_do_not_repeat": 60}`, wantErr: `"hours"`},
		{name: "unknown zone", schedule: `{"minute": 0, "timezone": "Mars/Olympus", "dst_fixes": ["skip", "repeat_use_both"], "max_shift_seconds_for_unskip_and_do_not_repeat": 60}`, wantErr: "Mars/Olympus"},
		{name: "never", schedule: `{"minute": 0, "day_of_month": 30, "month": 2, "timezone": "UTC", "dst_fixes": ["skip", "repeat_use_both"], "max_shift_seconds_for_unskip_and_do_not_repeat": 60}`, wantErr: "matches no time"},
		// Each matches some time, but none in the 50 years from now: it
		// would never run.
		{name: "year 9999", schedule: `{"minute": 0, "year": 9999, "timezone": "UTC", "dst_fixes": ["skip", "repeat_use_both"], "max_shift_seconds_for_unskip_and_do_not_repeat": 60}`, wantErr: "no event in the 50 years"},
		{name: "29 February from 2100", schedule: `{"minute": 0, "hour": 0, "day_of_month": 29, "month": 2, "year": {"start": 2100}, "timezone": "Europe/London", "dst_fixes": ["skip", "repeat_use_both"], "max_shift_seconds_for_unskip_and_do_not_repeat": 60}`, wantErr: "no event in the 50 years"},
		{name: "epoch period 2^63-1", schedule: `{"epoch": {"period": 9223372036854775807}, "max_shift_seconds_for_unskip_and_do_not_repeat": 60}`, wantErr: "no event in the 50 years"},
		{name: "epoch gone by", schedule: `{"epoch": [1000000000], "max_shift_seconds_for_unskip_and_do_not_repeat": 60}`, wantErr: "no event in the 50 years"},
	}
	for _, tc := range tests {
		for _, typ := range []string{"lorries", "scrapers"} {
			t.Run(tc.name+" "+typ, func(t *testing.T) {
				conf := `[{"type": "lorries", "prefix": "ok", "globs": []},
					{"type": "` + typ + `", "prefix": "p", "globs": ["*.lorry"], "schedule": ` + tc.schedule + `}]`
				cfg, err := Parse(mapFS(map[string]string{ConfFile: conf, "a.lorry": `{"x": {"type": "git", "url": "u"}}`}))
				if err == nil {
					t.Fatalf("Parse = %+v, nil; want an error containing %q", cfg, tc.wantErr)
				}
				var ce *ConfError
				if !errors.Is(err, ErrBadConf) || !errors.As(err, &ce) {
					t.Fatalf("error %v (%T) is not a *ConfError", err, err)
				}
				if ce.Section != 1 || ce.Type != typ || ce.Key != "schedule" {
					t.Errorf("got section %d (%s) key %q, want section 1 (%s) key \"schedule\" (%v)", ce.Section, ce.Type, ce.Key, typ, err)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("got error %q, want it to contain %q", err, tc.wantErr)
				}
			})
		}
	}
}

// TestParseBrokenSpecSchedule checks that a spec with a bad schedule is
// skipped and reported, and keeps its previous entry, while the other
// specs of its file are read.
func TestParseBrokenSpecSchedule(t *testing.T) {
	cfg := mustParse(t, map[string]string{
		ConfFile: `[{"type": "lorries", "prefix": "p", "globs": ["*.lorry"], "schedule": ` + nightItem + `}]`,
		"a.lorry": `{"bad": {"type": "git", "url": "u", "schedule": {"cron": "0 3 * *", "dst_fixes": ["skip", "repeat_use_both"],
				"max_shift_seconds_for_unskip_and_do_not_repeat": 60}},
			"good": {"type": "git", "url": "u"}}`,
	})
	if got, want := lorryPaths(cfg), []string{"p/good"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got lorries %v, want %v", got, want)
	}
	if len(cfg.Errors) != 1 || cfg.Errors[0].File != "a.lorry" ||
		!strings.HasPrefix(cfg.Errors[0].Error, `spec "bad": key "schedule": `) || !strings.Contains(cfg.Errors[0].Error, "cron") {
		t.Errorf("got errors %+v, want one for a.lorry naming spec \"bad\" and key \"schedule\"", cfg.Errors)
	}
	if !reflect.DeepEqual(cfg.Kept.Paths, []string{"p/bad"}) {
		t.Errorf("got kept paths %v, want [p/bad]: its previous entry stays", cfg.Kept.Paths)
	}
	if got := findLorry(t, cfg, "p/good").Schedule; got != nightText {
		t.Errorf("p/good: got schedule %s, want the section's %s", got, nightText)
	}
}

// TestParseScraperSchedule checks that a scraper spec may have its own
// schedule, and that a bad one is reported as for a lorry.
func TestParseScraperSchedule(t *testing.T) {
	files := scraperFiles()
	files["scrapers/c.scraper"] = `{"nightly": {"runtime": "fn", "module": "fn.nightly", "schedule": ` + nightItem + `},
		"broken": {"runtime": "fn", "module": "fn.broken", "schedule": {"minute": 0}}}`
	cfg := mustParse(t, files)
	if got := findLorry(t, cfg, "scrape/nightly"); got.Schedule != nightText || got.Cron == nil || got.Kind != wire.KindScraper {
		t.Errorf("scrape/nightly: got %+v, want a scraper with schedule %s", got, nightText)
	}
	if got := findLorry(t, cfg, "scrape/bills").Schedule; got != "" {
		t.Errorf("scrape/bills: got schedule %s, want none", got)
	}
	if len(cfg.Errors) != 1 || cfg.Errors[0].File != "scrapers/c.scraper" ||
		!strings.HasPrefix(cfg.Errors[0].Error, `spec "broken": key "schedule": `) {
		t.Errorf("got errors %+v, want one for scrapers/c.scraper naming spec \"broken\" and key \"schedule\"", cfg.Errors)
	}
	if !reflect.DeepEqual(cfg.Kept.Paths, []string{"scrape/broken"}) {
		t.Errorf("got kept paths %v, want [scrape/broken]", cfg.Kept.Paths)
	}
}

// TestParseSpecScheduleNeverFires checks that a spec's own schedule with no
// event in the 50 years from now is reported, naming the spec and the key,
// and keeps the spec's previous entry, as any bad schedule of a spec does.
func TestParseSpecScheduleNeverFires(t *testing.T) {
	cfg := mustParse(t, map[string]string{
		ConfFile: `[{"type": "lorries", "prefix": "p", "globs": ["*.lorry"]}]`,
		"a.lorry": `{"never": {"type": "git", "url": "u", "schedule": {"minute": 0, "year": 9999, "timezone": "UTC",
				"dst_fixes": ["skip", "repeat_use_both"], "max_shift_seconds_for_unskip_and_do_not_repeat": 60}},
			"good": {"type": "git", "url": "u"}}`,
	})
	if got, want := lorryPaths(cfg), []string{"p/good"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got lorries %v, want %v", got, want)
	}
	if len(cfg.Errors) != 1 || cfg.Errors[0].File != "a.lorry" ||
		!strings.HasPrefix(cfg.Errors[0].Error, `spec "never": key "schedule": has no event in the 50 years`) {
		t.Errorf("got errors %+v, want one for a.lorry naming spec \"never\" and key \"schedule\"", cfg.Errors)
	}
	if !reflect.DeepEqual(cfg.Kept.Paths, []string{"p/never"}) {
		t.Errorf("got kept paths %v, want [p/never]", cfg.Kept.Paths)
	}
}
