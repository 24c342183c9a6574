package routes

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/confgit"
)

// batchConfig hands out its configuration's lorries in batches, as
// confgit.Source does, and calls between after each batch.
type batchConfig struct {
	stubConfig
	// failAfter, if not 0, is the batch after which the read fails.
	failAfter int
	between   func(batch int)
	batches   []int // the size of each batch handed out
	reads     int   // the calls of ReadEach
}

func (c *batchConfig) ReadEach(ctx context.Context, n int, sections func(*confgit.Config) error,
	each func([]confgit.Lorry) error) (*confgit.Config, error) {
	c.reads++
	if c.err != nil {
		return nil, c.err
	}
	cfg := *c.cfg
	cfg.Lorries = nil
	if err := sections(&cfg); errors.Is(err, confgit.ErrSkipFiles) {
		return &cfg, nil
	} else if err != nil {
		return nil, err
	}
	for rest := c.cfg.Lorries; len(rest) > 0; {
		k := min(n, len(rest))
		if err := each(rest[:k]); err != nil {
			return nil, err
		}
		c.batches = append(c.batches, k)
		if c.between != nil {
			c.between(len(c.batches))
		}
		if len(c.batches) == c.failAfter {
			return nil, &confgit.FetchError{URL: "https://example.com/conf", Err: errors.New("connection reset")}
		}
		rest = rest[k:]
	}
	return &cfg, nil
}

func batchLorries(prefix string, n int) []confgit.Lorry {
	var ls []confgit.Lorry
	for i := range n {
		p := fmt.Sprintf("%s/%02d", prefix, i)
		ls = append(ls, confgit.Lorry{Path: p, Text: `{"` + p + `":{"type":"git","url":"u"}}`, Type: "git",
			File: prefix + ".lorry", Interval: time.Hour, Timeout: time.Minute, Queue: confgit.DefaultQueue})
	}
	return ls
}

// TestReadConfigurationAppliesInBatches reads a configuration a batch at
// a time, and checks that what a reader sees between the batches loses
// nothing: every lorry of the old configuration stays until every lorry
// of the new one is in place, and a read that fails halfway removes
// nothing.
func TestReadConfigurationAppliesInBatches(t *testing.T) {
	conf := &batchConfig{}
	ts := newTestServer(t, func(s *Server) { s.Config, s.ConfigBatch = conf, 10 })
	queue := func() []string {
		_, q := ts.call(t, "GET", "/1.0/list-queue", nil)
		return toStrings(q["queue"])
	}
	read := func() map[string]any {
		t.Helper()
		conf.batches = nil
		code, m := ts.call(t, "POST", "/1.0/read-configuration", url.Values{})
		if code != 200 {
			t.Fatalf("read-configuration = %d %v", code, m)
		}
		return m
	}

	old := batchLorries("old", 25)
	conf.cfg = &confgit.Config{Commit: "c1", Lorries: old}
	read()
	if want := []int{10, 10, 5}; !slices.Equal(conf.batches, want) {
		t.Errorf("first read: batches of %v; want %v", conf.batches, want)
	}

	// The new configuration keeps old/00 to old/04 and adds 25.
	next := append(batchLorries("new", 25), old[:5]...)
	slices.SortFunc(next, func(a, b confgit.Lorry) int { return strings.Compare(a.Path, b.Path) })
	var missing []string
	conf.between = func(batch int) {
		have := queue()
		for _, l := range old {
			if !slices.Contains(have, l.Path) {
				missing = append(missing, fmt.Sprintf("%s after batch %d", l.Path, batch))
			}
		}
	}
	// A read that fails after its first batch applies that batch and
	// removes nothing.
	conf.cfg, conf.failAfter, conf.batches = &confgit.Config{Commit: "c2", Lorries: next}, 1, nil
	if code, m := ts.call(t, "POST", "/1.0/read-configuration", url.Values{}); code != 502 {
		t.Fatalf("read-configuration failing halfway = %d %v; want 502", code, m)
	}
	if got := queue(); len(got) != 35 {
		t.Errorf("queue after a read failed halfway has %d lorries: %v; want the 25 old and the 10 of the first batch", len(got), got)
	}
	// Going back to the commit applied before applies it again: the
	// failed read changed the lorries.
	conf.cfg, conf.failAfter = &confgit.Config{Commit: "c1", Lorries: old}, 0
	read()
	if got := queue(); len(got) != 25 {
		t.Errorf("queue after reading c1 again has %d lorries: %v; want its 25", len(got), got)
	}
	conf.cfg = &confgit.Config{Commit: "c2", Lorries: next}
	m := read()
	if want := []int{10, 10, 10}; !slices.Equal(conf.batches, want) {
		t.Errorf("second read: batches of %v; want %v", conf.batches, want)
	}
	if len(missing) > 0 {
		t.Errorf("lorries of the old configuration missing between batches: %v", missing)
	}
	var want []string
	for _, l := range old[:5] {
		want = append(want, l.Path)
	}
	for _, l := range batchLorries("new", 25) {
		want = append(want, l.Path)
	}
	if got := queue(); !slices.Equal(got, want) {
		t.Errorf("queue = %v; want %v", got, want)
	}
	if m["lorries"] != 30.0 || m["added"] != 25.0 || m["removed"] != 20.0 {
		t.Errorf("read-configuration = %v; want 30 lorries, 25 added, 20 removed", m)
	}

	// The same commit again, after a fetch that failed, reads no file,
	// says what it holds and clears the failure.
	conf.between = nil
	conf.err = &confgit.FetchError{URL: "https://example.com/conf", Err: errors.New("refused")}
	if code, m := ts.call(t, "POST", "/1.0/read-configuration", url.Values{}); code != 502 {
		t.Fatalf("read-configuration failing to fetch = %d %v; want 502", code, m)
	}
	conf.err = nil
	m = read()
	if len(conf.batches) != 0 || m["lorries"] != 30.0 || m["commit"] != "c2" {
		t.Errorf("unchanged commit: batches %v, answer %v; want none, 30 lorries of c2", conf.batches, m)
	}
	if _, st := ts.call(t, "GET", "/1.0/status", nil); strings.Contains(st["warning_msg"].(string), "read-configuration failed") {
		t.Errorf("warning_msg after a good read = %q; want no failure", st["warning_msg"])
	}
}
