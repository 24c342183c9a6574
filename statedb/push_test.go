package statedb

import (
	"context"
	"reflect"
	"testing"
)

// A push finds its lorries through their stored upstream URLs, from the
// configuration and from hosts alike.
func TestLorriesByUpstream(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.update(t, func(tx *Tx) error {
		_, err := tx.SetConfigLorries(ctx, []NewLorry{
			{Path: "a", Text: "{}", Kind: "lorry", Interval: 1, Timeout: 1, UpstreamURL: "https://up.example/x/a"},
			{Path: "b", Text: "{}", Kind: "lorry", Interval: 1, Timeout: 1, UpstreamURL: "https://up.example/x/b"},
			{Path: "c", Text: "{}", Kind: "lorry", Interval: 1, Timeout: 1},
		}, Kept{})
		if err != nil {
			return err
		}
		if _, err := tx.SetConfigHosts(ctx, []Host{{Name: "h", Type: "gitlab"}}); err != nil {
			return err
		}
		_, _, err = tx.SetHostLorries(ctx, "h", []NewLorry{
			{Path: "h/a", Text: "{}", Kind: "lorry", UpstreamURL: "https://up.example/x/a"},
		})
		return err
	})
	find := func(urls ...string) []string {
		var got []string
		err := f.db.View(ctx, func(tx *Tx) error {
			var err error
			got, err = tx.LorriesByUpstream(ctx, urls)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got, want := find("https://up.example/x/a", "ssh://up.example/x/a"), []string{"a", "h/a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("find a = %v; want %v", got, want)
	}
	if got := find(""); len(got) != 0 {
		t.Errorf("find \"\" = %v; want none", got)
	}
	// A URL learnt for a lorry that is otherwise unchanged is stored.
	f.update(t, func(tx *Tx) error {
		_, err := tx.SetConfigLorries(ctx, []NewLorry{
			{Path: "a", Text: "{}", Kind: "lorry", Interval: 1, Timeout: 1, UpstreamURL: "https://up.example/x/a"},
			{Path: "b", Text: "{}", Kind: "lorry", Interval: 1, Timeout: 1, UpstreamURL: "https://up.example/x/b"},
			{Path: "c", Text: "{}", Kind: "lorry", Interval: 1, Timeout: 1, UpstreamURL: "https://up.example/x/c"},
		}, Kept{})
		return err
	})
	if got, want := find("https://up.example/x/c"), []string{"c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("find c = %v; want %v", got, want)
	}
}
