package statedb

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/statedb/dbtest"
)

// TestPathFilterFoldsASCIIOnly checks, on both backends in one run, that
// the path filters of the lorry and job pages match a path as SQLite's
// LIKE does: the text as given, wildcards and the escape included, with
// ASCII letters of either case, and no other letter of another case.
func TestPathFilterFoldsASCIIOnly(t *testing.T) {
	paths := []string{"a/Ab", "a/ab", "b/AB", "É/x", "é/x", "ẞ/y", "ß/y", "İ/z", "i/z", "I/z",
		"p%q", "pxq", "p_q", "p\\q", "p\\\\q", "Ω/w", "ω/w"}
	needles := []string{"a", "A", "ab", "AB", "aB", "É", "é", "ẞ", "ß", "İ", "i", "I",
		"%", "_", "\\", "\\\\", "p%", "p_", "x", "Ω", "ω", "/", "q"}
	run := func(t *testing.T, place string, setup ...string) {
		ctx := context.Background()
		db, err := Open(ctx, place, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var want []NewLorry
		for _, p := range paths {
			want = append(want, NewLorry{Path: p, Text: "{}", Kind: "lorry", Interval: 100, Timeout: 50})
		}
		err = db.Update(ctx, func(tx *Tx) error {
			if _, err := tx.SetConfigLorries(ctx, want, Kept{}); err != nil {
				return err
			}
			for _, p := range paths {
				if _, err := tx.exec(ctx, `INSERT INTO jobs (path, kind, minion, host, pid, started, updated, ended, status, timeout, queue)
					VALUES ($1, 'lorry', 'm', 'h', 1, 0, 0, 1, 'finished', 0, 'default')`, p); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range setup {
			if err := db.Update(ctx, func(tx *Tx) error { _, err := tx.exec(ctx, q); return err }); err != nil {
				t.Fatal(err)
			}
		}
		for _, needle := range needles {
			var match []string
			for _, p := range paths {
				if strings.Contains(foldASCII(p), foldASCII(needle)) {
					match = append(match, p)
				}
			}
			slices.Sort(match)
			err := db.View(ctx, func(tx *Tx) error {
				f := LorryFilter{Path: needle}
				n, err := tx.CountLorriesMatching(ctx, f)
				if err != nil {
					return err
				}
				if n != int64(len(match)) {
					t.Errorf("CountLorriesMatching(%q) = %d, want %d (%q)", needle, n, len(match), match)
				}
				page, err := tx.LorryPage(ctx, f, 0, len(paths))
				if err != nil {
					return err
				}
				var got []string
				for _, l := range page {
					got = append(got, l.Path)
				}
				slices.Sort(got)
				if !slices.Equal(got, match) {
					t.Errorf("LorryPage(%q) = %q, want %q", needle, got, match)
				}
				jobs, err := tx.JobsBefore(ctx, JobFilter{Path: needle}, 1<<62, len(paths))
				if err != nil {
					return err
				}
				got = got[:0]
				for _, j := range jobs.Jobs {
					got = append(got, j.Path)
				}
				slices.Sort(got)
				if !slices.Equal(got, match) {
					t.Errorf("JobsBefore(%q) = %q, want %q", needle, got, match)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("sqlite", func(t *testing.T) { run(t, filepath.Join(t.TempDir(), "state.db")) })
	// The tests' cluster is of the C locale, whose case rules know only
	// ASCII; a database of an installation is most often of a locale
	// that knows all of Unicode's, as ICU's root locale does. The paths
	// take that here.
	t.Run("postgres", func(t *testing.T) {
		run(t, dbtest.DatabaseOrSkip(t), `ALTER TABLE lorries ALTER COLUMN path TYPE TEXT COLLATE "und-x-icu"`,
			`ALTER TABLE jobs ALTER COLUMN path TYPE TEXT COLLATE "und-x-icu"`)
	})
}

// foldASCII makes the ASCII letters of s lower case, and no other.
func foldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
