package control

import (
	"context"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/statedb"
)

// TestHeartbeatForgetsReplicas: a replica not heard from for
// ReplicaForget is forgotten by the heartbeat of another, not before; and
// ReplicaState says down after two lease terms.
func TestHeartbeatForgetsReplicas(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		forget time.Duration
		want   time.Duration // how long r2 stays listed
	}{
		{name: "default", want: DefaultReplicaForget},
		{name: "set", forget: 90 * time.Second, want: 90 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a1, fake, _ := newApp(t)
			a1.Replica, a1.ReplicaForget, a1.LeaseTerm = Replica{Name: "r1", URL: "http://r1"}, tc.forget, 4*time.Second
			a2 := &App{DB: a1.DB, Replica: Replica{Name: "r2", URL: "http://r2"}}
			if err := a2.Heartbeat(ctx, time.Unix(1000, 0)); err != nil {
				t.Fatal(err)
			}
			listed := func(at int64) []statedb.Replica {
				t.Helper()
				fake.Set(at)
				if err := a1.Heartbeat(ctx, time.Unix(1000, 0)); err != nil {
					t.Fatal(err)
				}
				var got []statedb.Replica
				err := a1.DB.View(ctx, func(tx *statedb.Tx) error {
					var err error
					got, err = tx.Replicas(ctx)
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			for _, c := range []struct {
				at    int64
				state string
			}{{1008, ReplicaUp}, {1009, ReplicaDown}, {1000 + int64(tc.want.Seconds()), ReplicaDown}} {
				got := listed(c.at)
				if len(got) != 2 || got[1].Name != "r2" {
					t.Fatalf("%d s after r2 was seen: replicas %+v; want r1 and r2", c.at-1000, got)
				}
				if s := a1.ReplicaState(got[1], c.at); s != c.state {
					t.Errorf("%d s after r2 was seen, with a lease term of 4s: r2 %s; want %s", c.at-1000, s, c.state)
				}
				if s := a1.ReplicaState(got[0], c.at); s != ReplicaUp {
					t.Errorf("r1, just seen: %s; want up", s)
				}
			}
			if got := listed(1001 + int64(tc.want.Seconds())); len(got) != 1 || got[0].Name != "r1" {
				t.Errorf("%v after r2 was seen: replicas %+v; want r1 alone", tc.want+time.Second, got)
			}
		})
	}
}

// TestReplicaOf names a replica by the host and port it listens on unless
// told otherwise.
func TestReplicaOf(t *testing.T) {
	r := ReplicaOf("", "", "127.0.0.1:4567")
	if !strings.HasSuffix(r.Name, ":4567") || r.URL != "http://127.0.0.1:4567" {
		t.Errorf("default replica = %+v", r)
	}
	r = ReplicaOf("r1", "https://r1.example.org", "127.0.0.1:4567")
	if r.Name != "r1" || r.URL != "https://r1.example.org" {
		t.Errorf("named replica = %+v", r)
	}
}

// TestHeartbeaterRunOnce: a beat of the Heartbeater lists the replica
// with the time it started.
func TestHeartbeaterRunOnce(t *testing.T) {
	ctx := context.Background()
	a, _, _ := newApp(t)
	a.Replica = Replica{Name: "r1", URL: "http://r1"}
	(&Heartbeater{App: a, Every: time.Hour}).runOnce(ctx, time.Unix(500, 0))
	var got []statedb.Replica
	err := a.DB.View(ctx, func(tx *statedb.Tx) error {
		var err error
		got, err = tx.Replicas(ctx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "r1" || got[0].URL != "http://r1" || got[0].Started != 500 {
		t.Errorf("replicas after a beat: %+v; want r1 at http://r1, started at 500", got)
	}
}
