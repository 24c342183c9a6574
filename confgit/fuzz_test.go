package confgit

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"testing/fstest"
	"time"
)

// The seeds of the fuzz targets are in testdata/fuzz/<target>; go test
// runs them as tests.

// maxFuzzInput bounds the inputs of the fuzz targets: what they look for
// shows in small inputs, and a parse may take time and memory in
// proportion to its input, not beyond.
const maxFuzzInput = 16 << 10

// FuzzParseConf: no lorry-controller.conf panics; a broken one is a
// *ConfError; a good one gives sections whose values are usable, and host
// sections that parse again, from the section stored, to the same host.
func FuzzParseConf(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			t.Skip()
		}
		pc, err := parseConf(data)
		if err != nil {
			var ce *ConfError
			if !errors.As(err, &ce) || !errors.Is(err, ErrBadConf) {
				t.Fatalf("error %v (%T) is not a *ConfError", err, err)
			}
			return
		}
		for _, ls := range pc.lorries {
			if ls.interval <= 0 || ls.timeout <= 0 {
				t.Errorf("lorries section [%d]: interval %v, timeout %v; want both positive", ls.index, ls.interval, ls.timeout)
			}
		}
		for _, h := range pc.hosts {
			again, err := ParseHostSection(h.Section)
			if err != nil {
				t.Fatalf("host %q: its section %s does not parse again: %v", h.Name, h.Section, err)
			}
			// The section alone does not say where it was.
			again.Index = h.Index
			if !reflect.DeepEqual(again, h) {
				t.Errorf("host parsed again from its section:\ngot  %+v\nwant %+v", again, h)
			}
		}
		// The whole configuration, with a .lorry file for the globs to
		// find: every lorry it makes has a usable spec.
		cfg, err := Parse(fstest.MapFS{
			ConfFile:           {Data: data},
			"a.lorry":          {Data: []byte(`{"x": {"type": "git", "url": "https://example.com/x.git"}}`)},
			"dir/b.lorry":      {Data: []byte("y:\n  type: tarball\n  url: https://example.com/y.tar.gz\n")},
			"dir/broken.lorry": {Data: []byte(`{`)},
		})
		if err != nil {
			t.Fatalf("parseConf accepted the file but Parse failed: %v", err)
		}
		for _, l := range cfg.Lorries {
			if l.Interval <= 0 || l.Timeout <= 0 || l.Path == "" {
				t.Errorf("lorry %+v: want a path and a positive interval and timeout", l)
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(l.Text), &v); err != nil {
				t.Errorf("lorry %s: text %q is not JSON: %v", l.Path, l.Text, err)
			}
		}
	})
}

// FuzzParseInterval: no INTERVAL panics; one that parses is a positive
// whole number of seconds, and that number of seconds, as a JSON number
// or a string with a unit, parses to the same interval.
func FuzzParseInterval(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > maxFuzzInput {
			t.Skip()
		}
		for _, v := range []any{s, json.Number(s)} {
			d, err := ParseInterval(v)
			if err != nil {
				continue
			}
			if d <= 0 || d%time.Second != 0 {
				t.Fatalf("ParseInterval(%#v) = %v; want a positive whole number of seconds", v, d)
			}
			secs := int64(d / time.Second)
			for _, again := range []any{json.Number(strconv.FormatInt(secs, 10)), strconv.FormatInt(secs, 10) + "s"} {
				if d2, err := ParseInterval(again); err != nil || d2 != d {
					t.Errorf("ParseInterval(%#v) = %v, but ParseInterval(%#v) = %v, %v", v, d, again, d2, err)
				}
			}
		}
	})
}
