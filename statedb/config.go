package statedb

import (
	"context"
	"encoding/json"
	"fmt"
)

// ConfigState is what the WEBAPP remembers of reading CONFGIT.
type ConfigState struct {
	Commit  string       `json:"commit"`  // commit in use, "" before the first good read
	ReadAt  int64        `json:"read_at"` // when it was applied
	Lorries int          `json:"lorries"` // lorries it defines
	Hosts   int          `json:"hosts"`   // upstream hosts it defines
	Errors  []FileError  `json:"errors"`  // .lorry files and specs skipped
	Failure string       `json:"failure"` // why the last read failed, "" if it did not
	FailAt  int64        `json:"fail_at"` // when it failed
	Changes LorryChanges `json:"changes"` // what the last good read changed
	// Runtimes are the runtime sections of the commit in use.
	Runtimes []RuntimeSection `json:"runtimes"`
}

// RuntimeSection is a runtime section of the configuration in use.
type RuntimeSection struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	ID      string `json:"id"`
	Python  string `json:"python"`
	Path    string `json:"path"`
	Commit  string `json:"commit"`
}

// FileError says why a file of the configuration, or part of it, was
// skipped.
type FileError struct {
	File  string `json:"file"`
	Error string `json:"error"`
}

// ConfigState returns what is known of the configuration in use.
func (tx *Tx) ConfigState(ctx context.Context) (ConfigState, error) {
	var c ConfigState
	v, ok, err := tx.setting(ctx, settingConfig)
	if err != nil || !ok {
		return c, err
	}
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		return c, fmt.Errorf("setting %s: %w", settingConfig, err)
	}
	return c, nil
}

// SetConfigState records the configuration in use.
func (tx *Tx) SetConfigState(ctx context.Context, c ConfigState) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return tx.setSetting(ctx, settingConfig, string(b))
}
