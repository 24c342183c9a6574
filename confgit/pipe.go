package confgit

import "errors"

// batchPipe hands batches of lorries to a function on a goroutine of its
// own, so that the next batch is read from the pack and parsed while the
// one before is applied (on a machine with a second core). At most one
// batch waits between them, and one is being applied, so the memory the
// pipe holds stays a few batches.
type batchPipe struct {
	each   func([]Lorry) error
	ch     chan []Lorry
	failed chan struct{} // closed when each has failed
	done   chan struct{} // closed when the goroutine has ended
	err    error         // of each; read after failed or done is closed
	// panicked is what each panicked with, if it did.
	panicked *pipePanic
}

// pipePanic is a panic of each.
type pipePanic struct{ value any }

// errPanicked stops the read when each has panicked.
var errPanicked = errors.New("applying a batch panicked")

func newBatchPipe(each func([]Lorry) error) *batchPipe {
	p := &batchPipe{each: each, ch: make(chan []Lorry, 1), failed: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *batchPipe) run() {
	defer close(p.done)
	// A panic of each is raised again by close, on the caller's
	// goroutine, where the caller's recover can see it.
	defer func() {
		if v := recover(); v != nil {
			p.panicked, p.err = &pipePanic{v}, errPanicked
			close(p.failed)
		}
	}()
	for batch := range p.ch {
		if err := p.each(batch); err != nil {
			p.err = err
			close(p.failed)
			return
		}
	}
}

// send hands batch on, waiting while one waits already. Once each has
// failed, it answers each's error and hands nothing on.
func (p *batchPipe) send(batch []Lorry) error {
	select {
	case <-p.failed:
		return p.err
	default:
	}
	select {
	case p.ch <- batch:
		return nil
	case <-p.failed:
		return p.err
	}
}

// close waits for each to have applied every batch sent, and answers its
// error, if it failed.
func (p *batchPipe) close() error {
	close(p.ch)
	<-p.done
	if p.panicked != nil {
		panic(p.panicked.value)
	}
	return p.err
}
