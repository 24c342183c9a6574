package confgit

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"lorrycontroller.dev/lc/cron"
	"lorrycontroller.dev/lc/lorryspec"
)

// DefaultQueue is the queue of an entry whose section names none. It
// exists without a queue section, with no limit.
const DefaultQueue = "default"

// Queue sort orders.
var queueSorts = map[string]bool{"queue-order": true, "fifo": true, "lifo": true}

// Queue is a "queue" section: a limit on the jobs of the sections that
// name it, across all minions.
type Queue struct {
	Name string
	// Threads is the most jobs of the queue running at once; nil is no
	// limit.
	Threads *int64
	Sort    string // queue-order, fifo or lifo
	// Schedule is "threads-schedule" as compact JSON, "" when absent:
	// [{"schedule": item, "threads": n}, ...], checked with the cron package.
	Schedule string
}

func parseQueueSection(i int, sec map[string]any) (Queue, error) {
	fail := func(key string, err error) (Queue, error) {
		return Queue{}, &ConfError{Section: i, Type: "queue", Key: key, Err: err}
	}
	q := Queue{Sort: "queue-order"}
	name, err := requireString(sec, "name")
	if err != nil {
		return fail("name", err)
	}
	if name == "" {
		return fail("name", errors.New("is empty"))
	}
	q.Name = name
	if q.Threads, err = threadsValue(sec["threads"]); err != nil {
		return fail("threads", err)
	}
	if sv, ok := sec["sort"]; ok {
		s, ok := sv.(string)
		if !ok || !queueSorts[s] {
			return fail("sort", fmt.Errorf("must be \"queue-order\", \"fifo\" or \"lifo\", not %s", describe(sv)))
		}
		q.Sort = s
	}
	if sv, ok := sec["threads-schedule"]; ok {
		list, ok := sv.([]any)
		if !ok {
			return fail("threads-schedule", fmt.Errorf("must be a list, not %s", lorryspec.KindOf(sv)))
		}
		for j, e := range list {
			m, ok := e.(map[string]any)
			if !ok {
				return fail("threads-schedule", fmt.Errorf("item [%d] must be an object, not %s", j, lorryspec.KindOf(e)))
			}
			for k := range m {
				if k != "schedule" && k != "threads" {
					return fail("threads-schedule", fmt.Errorf("item [%d]: unknown key %q (want schedule and threads)", j, k))
				}
			}
			if _, ok := m["threads"]; !ok {
				return fail("threads-schedule", fmt.Errorf("item [%d]: threads: missing", j))
			}
			if _, err := threadsValue(m["threads"]); err != nil {
				return fail("threads-schedule", fmt.Errorf("item [%d]: threads: %w", j, err))
			}
			if _, err := cron.ParseValue(m["schedule"], nil); err != nil {
				return fail("threads-schedule", fmt.Errorf("item [%d]: schedule: %w", j, err))
			}
		}
		text, err := json.Marshal(list)
		if err != nil {
			return fail("threads-schedule", err)
		}
		q.Schedule = string(text)
	}
	return q, nil
}

// threadsValue reads a number of threads: a whole number from 0 up, or
// null (or absent) for no limit.
func threadsValue(v any) (*int64, error) {
	if v == nil {
		return nil, nil
	}
	var f float64
	switch n := v.(type) {
	case json.Number:
		var err error
		if f, err = n.Float64(); err != nil {
			return nil, fmt.Errorf("must be a whole number or null, not %s", n)
		}
	case float64:
		f = n
	case int:
		f = float64(n)
	default:
		return nil, fmt.Errorf("must be a whole number or null, not %s", lorryspec.KindOf(v))
	}
	if f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
		return nil, fmt.Errorf("must be a whole number from 0, not %v", v)
	}
	t := int64(f)
	return &t, nil
}

// queueKey reads a section's "queue" key: the default queue when absent.
func queueKey(sec map[string]any) (string, error) {
	v, ok := sec["queue"]
	if !ok {
		return DefaultQueue, nil
	}
	s, ok := v.(string)
	if !ok || s == "" {
		return "", fmt.Errorf("must be the name of a queue, not %s", describe(v))
	}
	return s, nil
}
