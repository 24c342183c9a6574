package statedb

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

func allEvents() map[string]bool {
	m := map[string]bool{}
	for _, e := range Events {
		m[e] = true
	}
	return m
}

func (f *fixture) outbox(t *testing.T) []Delivery {
	t.Helper()
	var ds []Delivery
	err := f.db.View(context.Background(), func(tx *Tx) error {
		var err error
		ds, err = tx.Deliveries(context.Background(), 100)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// jobsFailed reads the job-failed payloads in the outbox, oldest first.
func (f *fixture) jobsFailed(t *testing.T) []JobFailed {
	t.Helper()
	var out []JobFailed
	ds := f.outbox(t)
	for i := len(ds) - 1; i >= 0; i-- {
		if ds[i].Event != EventJobFailed {
			t.Fatalf("delivery %+v; want only job-failed", ds[i])
		}
		var p JobFailed
		if err := json.Unmarshal([]byte(ds[i].Payload), &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// TestJobFailedNotified ends jobs in every way and checks that each end
// but success puts a job-failed into the outbox.
func TestJobFailedNotified(t *testing.T) {
	f := newFixture(t, Options{Notify: allEvents()})
	f.lorries(t, "a", "b", "c", "d", "e")
	m1 := MinionID{Name: "m1", Host: "h", PID: 1}

	a := f.mustGive(t, m1)
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Exit: exit(0)}); err != nil {
		t.Fatal(err)
	}
	if ds := f.outbox(t); len(ds) != 0 {
		t.Fatalf("a success notified: %+v", ds)
	}

	a = f.mustGive(t, m1)
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Stderr: []byte("fatal: gone\n"), Exit: exit(3)}); err != nil {
		t.Fatal(err)
	}
	b := f.mustGive(t, m1)
	f.update(t, func(tx *Tx) error {
		return tx.FailJob(context.Background(), b.Job.ID, "prepare the downstream repository: no")
	})
	c := f.mustGive(t, m1)
	// m1 comes back with a new pid: its job died with it. Its next job
	// is then never heard of again.
	d := f.mustGive(t, MinionID{Name: "m1", Host: "h", PID: 2})
	f.clock.Set(f.clock.Now().Unix() + 3600)
	f.update(t, func(tx *Tx) error { _, err := tx.RemoveGhostJobs(context.Background(), 60); return err })

	got := f.jobsFailed(t)
	want := []struct {
		path, status string
		exit         *int64
		err          string
	}{
		{a.Job.Path, StatusFailed, exit(3), "job 2 failed with exit 3:\nfatal: gone"},
		{b.Job.Path, StatusFailed, nil, "job 3 failed:\nprepare the downstream repository: no"},
		{c.Job.Path, StatusLost, nil, ""},
		{d.Job.Path, StatusLost, nil, ""},
	}
	if len(got) != len(want) {
		t.Fatalf("job-failed payloads %+v; want %d", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Lorry != w.path || g.Status != w.status || (g.Exit == nil) != (w.exit == nil) ||
			(w.exit != nil && *g.Exit != *w.exit) || g.Minion != "m1" || g.Kind != "lorry" {
			t.Errorf("payload %d: %+v; want lorry %s, status %s, exit %v", i, g, w.path, w.status, w.exit)
		}
		if w.err != "" && g.Error != w.err {
			t.Errorf("payload %d: error %q; want %q", i, g.Error, w.err)
		}
		if g.Error != f.lorry(t, g.Lorry).LastRunError {
			t.Errorf("payload %d: error %q; want the lorry's last_run_error", i, g.Error)
		}
	}
}

func TestNotifyOnlyEnabledEventsAndInTheTransaction(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{Notify: map[string]bool{EventHostListingFailed: true}})
	f.update(t, func(tx *Tx) error {
		if err := tx.Notify(ctx, EventJobFailed, JobFailed{Lorry: "a"}); err != nil {
			return err
		}
		return tx.Notify(ctx, EventHostListingFailed, HostListingFailed{Host: "h", Error: "e"})
	})
	ds := f.outbox(t)
	if len(ds) != 1 || ds[0].Event != EventHostListingFailed || ds[0].Payload != `{"host":"h","error":"e"}` ||
		ds[0].Status != DeliveryPending || ds[0].Created != 1000 || ds[0].NextTry != 1000 {
		t.Fatalf("outbox %+v; want the one enabled event, pending and due now", ds)
	}

	// A transaction that fails takes its notifications with it.
	boom := errors.New("boom")
	err := f.db.Update(ctx, func(tx *Tx) error {
		if err := tx.Notify(ctx, EventHostListingFailed, HostListingFailed{Host: "h2"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if ds := f.outbox(t); len(ds) != 1 {
		t.Errorf("outbox holds %d deliveries after a rollback; want 1", len(ds))
	}

	err = f.db.Update(ctx, func(tx *Tx) error { return tx.Notify(ctx, "jobs-failed", nil) })
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("Notify of an unknown event = %v; want ErrInvalid", err)
	}
	err = f.db.Update(ctx, func(tx *Tx) error { return tx.Notify(ctx, EventHostListingFailed, []int{1}) })
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("Notify with a list = %v; want ErrInvalid", err)
	}
}

func TestNoNotificationsByDefault(t *testing.T) {
	f := newFixture(t, Options{})
	f.lorries(t, "a")
	a := f.mustGive(t, MinionID{Name: "m1", Host: "h", PID: 1})
	if _, err := f.report(t, JobUpdate{ID: a.Job.ID, Exit: exit(1)}); err != nil {
		t.Fatal(err)
	}
	if ds := f.outbox(t); len(ds) != 0 {
		t.Errorf("outbox %+v; want nothing when no event is enabled", ds)
	}
}

func TestRecordDelivery(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{Notify: allEvents()})
	f.update(t, func(tx *Tx) error { return tx.Notify(ctx, EventJobFailed, JobFailed{Lorry: "a"}) })
	id := f.outbox(t)[0].ID
	f.update(t, func(tx *Tx) error {
		return tx.RecordDelivery(ctx, id, DeliveryAttempt{Status: DeliveryPending, NextTry: 1010, Code: 500, Error: "answered 500"})
	})
	var due []Delivery
	f.clock.Set(1009)
	err := f.db.View(ctx, func(tx *Tx) error { var err error; due, err = tx.DueDeliveries(ctx, 10); return err })
	if err != nil || len(due) != 0 {
		t.Fatalf("due before next_try: %+v, %v; want none", due, err)
	}
	f.clock.Set(1010)
	err = f.db.View(ctx, func(tx *Tx) error { var err error; due, err = tx.DueDeliveries(ctx, 10); return err })
	if err != nil || len(due) != 1 || due[0].Attempts != 1 || *due[0].LastCode != 500 || *due[0].LastTry != 1000 {
		t.Fatalf("due at next_try: %+v, %v; want the delivery after 1 attempt", due, err)
	}
	f.update(t, func(tx *Tx) error {
		return tx.RecordDelivery(ctx, id, DeliveryAttempt{Status: DeliveryDelivered, Code: 204})
	})
	err = f.db.Update(ctx, func(tx *Tx) error { return tx.RecordDelivery(ctx, id, DeliveryAttempt{Status: DeliveryDelivered}) })
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("recording a delivered delivery again = %v; want ErrNotFound", err)
	}
	var counts map[string]int64
	err = f.db.View(ctx, func(tx *Tx) error { var err error; counts, err = tx.DeliveryCounts(ctx); return err })
	if err != nil || counts[DeliveryDelivered] != 1 || counts[DeliveryPending] != 0 {
		t.Errorf("counts %v, %v; want 1 delivered", counts, err)
	}
}

func TestOutboxClaims(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{Notify: allEvents()})
	other := f.second(t, Options{Notify: allEvents()})
	f.update(t, func(tx *Tx) error {
		if err := tx.Notify(ctx, EventJobFailed, JobFailed{Lorry: "a"}); err != nil {
			return err
		}
		return tx.Notify(ctx, EventJobFailed, JobFailed{Lorry: "b"})
	})
	claim := func(db *DB, owner string, limit int) []Delivery {
		t.Helper()
		var ds []Delivery
		err := db.Update(ctx, func(tx *Tx) error {
			var err error
			ds, err = tx.ClaimDeliveries(ctx, owner, 60e9, limit)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	record := func(db *DB, id int64, owner string) error {
		return db.Update(ctx, func(tx *Tx) error {
			return tx.RecordDelivery(ctx, id, DeliveryAttempt{Status: DeliveryDelivered, Code: 204, Owner: owner})
		})
	}
	mine := claim(f.db, "A", 1)
	if len(mine) != 1 || mine[0].Payload != `{"lorry":"a","job_id":0,"kind":"","status":"","exit":null,"minion":"","error":"","error_class":""}` {
		t.Fatalf("A claimed %+v; want the oldest, of a", mine)
	}
	theirs := claim(other, "B", 10)
	if len(theirs) != 1 || theirs[0].ID == mine[0].ID {
		t.Fatalf("B claimed %+v; want only the one A did not claim", theirs)
	}
	if again := claim(other, "C", 10); len(again) != 0 {
		t.Errorf("C claimed %+v while A and B hold their claims; want none", again)
	}
	wantTaken(t, "B recording A's delivery", record(other, mine[0].ID, "B"))
	wantTaken(t, "recording A's delivery under no claim", record(other, mine[0].ID, ""))
	// A dies; its claim runs out, and C takes the delivery over.
	f.clock.Set(1061)
	again := claim(other, "C", 1)
	if len(again) != 1 || again[0].ID != mine[0].ID {
		t.Fatalf("C claimed %+v after A's claim ran out; want A's", again)
	}
	wantTaken(t, "A recording after C took over", record(f.db, mine[0].ID, "A"))
	if err := record(other, again[0].ID, "C"); err != nil {
		t.Fatal(err)
	}
	if err := record(f.db, theirs[0].ID, "B"); err != nil {
		t.Errorf("B's claim ran out with no one taking it over: recording it = %v; want it recorded", err)
	}
	if err := record(f.db, mine[0].ID, "A"); !errors.Is(err, ErrNotFound) {
		t.Errorf("recording a delivered delivery: %v; want ErrNotFound", err)
	}
}
