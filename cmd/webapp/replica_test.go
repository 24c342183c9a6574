package main

import (
	"io"
	"strings"
	"testing"
)

// TestStateDBPasswordNotOnCommandLine refuses a PostgreSQL password on
// the command line, in either form of the flag, and takes a URL without
// one.
func TestStateDBPasswordNotOnCommandLine(t *testing.T) {
	for _, args := range [][]string{
		{"--statedb", "postgres://lorry:sekrit@db/lorry"},
		{"--statedb=postgres://lorry:sekrit@db/lorry"},
		{"-statedb", "postgres://lorry@db/lorry?password=sekrit"},
	} {
		_, err := parseFlags(args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--statedb-password-file") {
			t.Errorf("%q: err = %v; want a refusal naming --statedb-password-file", args, err)
		} else if strings.Contains(err.Error(), "sekrit") {
			t.Errorf("%q: the refusal shows the password: %v", args, err)
		}
	}
	c, err := parseFlags([]string{"--statedb", "postgres://lorry@db/lorry", "--statedb-password-file", "/x"}, io.Discard)
	if err != nil || c.StateDB != "postgres://lorry@db/lorry" || c.StateDBPasswordFile != "/x" {
		t.Errorf("a URL without a password: %+v, %v", c.StateDB, err)
	}
}

// TestReplicaOf names a replica by the host and port it listens on unless
// told otherwise.
func TestReplicaOf(t *testing.T) {
	r := replicaOf(Config{}, "127.0.0.1:4567")
	if !strings.HasSuffix(r.Name, ":4567") || r.URL != "http://127.0.0.1:4567" {
		t.Errorf("default replica = %+v", r)
	}
	r = replicaOf(Config{ReplicaName: "r1", ReplicaURL: "https://r1.example.org"}, "127.0.0.1:4567")
	if r.Name != "r1" || r.URL != "https://r1.example.org" {
		t.Errorf("named replica = %+v", r)
	}
}
