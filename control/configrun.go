package control

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// ConfigRun is one application of the configuration, which runs to its
// end whatever its callers do: a caller that goes away (a hook with a
// timeout, a closed connection) neither cancels it nor undoes what it
// applied. Only the App's Background ending stops it.
type ConfigRun struct {
	done    chan struct{}
	res     ConfigResult
	err     error
	panic   *RunPanic
	started int64

	mu      sync.Mutex
	commit  string
	lorries atomic.Int64
}

// Done is closed when the run has ended.
func (r *ConfigRun) Done() <-chan struct{} { return r.done }

// Result is what the run did; call it once Done is closed. If the run
// panicked, Result panics with a *RunPanic.
func (r *ConfigRun) Result() (ConfigResult, error) {
	<-r.done
	if r.panic != nil {
		panic(r.panic)
	}
	return r.res, r.err
}

// RunPanic is the panic of a run, raised again in the goroutine that
// asks for its result.
type RunPanic struct {
	Value any
	Stack string // where it was first raised
}

func (p *RunPanic) String() string { return fmt.Sprint(p.Value) }

// PanicStack is the stack where the panic was first raised.
func (p *RunPanic) PanicStack() string { return p.Stack }

// ConfigProgress is how far a running application of the configuration
// has come.
type ConfigProgress struct {
	// Commit is the commit being applied; "" while CONFGIT is fetched.
	Commit string `json:"commit"`
	// Lorries is how many lorries of it are applied so far.
	Lorries int64 `json:"lorries_done"`
	// StartedAt is when the run started, in Unix seconds.
	StartedAt int64 `json:"started_at"`
}

// Progress is how far the run has come.
func (r *ConfigRun) Progress() ConfigProgress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return ConfigProgress{Commit: r.commit, Lorries: r.lorries.Load(), StartedAt: r.started}
}

func (r *ConfigRun) setCommit(c string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commit = c
}

func (r *ConfigRun) addLorries(n int) {
	if r != nil {
		r.lorries.Add(int64(n))
	}
}

// configRuns keeps the App's applications one at a time: the one
// running, and the one that callers who came meanwhile wait for.
type configRuns struct {
	mu      sync.Mutex
	running *ConfigRun
	next    *ConfigRun
	// nextCtx is the context of the caller who asked for next first.
	nextCtx context.Context
}

// StartConfiguration starts applying the configuration, or joins an
// application that a caller asked for since the running one started:
// a caller never waits for two, and never starts a second one while one
// runs. A caller who comes while one runs gets the next one, which starts
// when it ends and finds, unless CONFGIT changed meanwhile, the commit
// applied and reads nothing again.
//
// The run's context keeps ctx's values but not its end; it ends with the
// App's Background.
func (a *App) StartConfiguration(ctx context.Context) *ConfigRun {
	rs := &a.configRuns
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.running == nil {
		rs.running = a.newConfigRun()
		go a.runConfiguration(ctx, rs.running)
		return rs.running
	}
	if rs.next == nil {
		rs.next, rs.nextCtx = &ConfigRun{done: make(chan struct{})}, ctx
	}
	return rs.next
}

// ConfigRunning is the application of the configuration running now in
// this process, if any.
func (a *App) ConfigRunning() (ConfigProgress, bool) {
	rs := &a.configRuns
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.running == nil {
		return ConfigProgress{}, false
	}
	return rs.running.Progress(), true
}

func (a *App) newConfigRun() *ConfigRun {
	return &ConfigRun{done: make(chan struct{}), started: a.DB.Now()}
}

// runConfiguration applies the configuration as run, then starts the
// next run if a caller asked for one meanwhile.
func (a *App) runConfiguration(ctx context.Context, run *ConfigRun) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := func() bool { return false }
	if a.Background != nil {
		stop = context.AfterFunc(a.Background, cancel)
	}
	func() {
		defer func() {
			if v := recover(); v != nil {
				run.panic = &RunPanic{Value: v, Stack: string(debug.Stack())}
				run.err = fmt.Errorf("applying the configuration panicked: %v", v)
			}
		}()
		run.res, run.err = a.applyLocked(rctx, run)
	}()
	stop()
	cancel()
	rs := &a.configRuns
	rs.mu.Lock()
	next, nextCtx := rs.next, rs.nextCtx
	rs.running, rs.next, rs.nextCtx = next, nil, nil
	if next != nil {
		next.mu.Lock()
		next.started = a.DB.Now()
		next.mu.Unlock()
		go a.runConfiguration(nextCtx, next)
	}
	rs.mu.Unlock()
	close(run.done)
}
