package minion

import (
	"context"
	"errors"
	"log/slog"

	"lorrycontroller.dev/lc/proc"
)

// ErrRetired is what RunOnce and Run return once the WEBAPP has retired
// the minion: it is to exit, and not be started again, until an admin
// un-retires its name. The command maps it to ExitRetired.
var ErrRetired = errors.New("the webapp retired this minion")

// ExitRetired is the exit status of a retired minion. The minion's
// systemd unit names it in RestartPreventExitStatus=, so that a retired
// minion stays stopped.
const ExitRetired = 79

// confirm tells the WEBAPP at once that the job's process started, which
// makes the claimed job running; a job not confirmed within the WEBAPP's
// claim timeout is ended as orphaned and its lorry handed out again. A
// confirmation that cannot be delivered is left to the first regular
// update. It returns false when the WEBAPP no longer counts the job as
// ours: then the job has been killed and must not be reported.
func (m *Minion) confirm(ctx context.Context, log *slog.Logger, j *job, p *proc.Process) bool {
	kill, err := m.jobUpdate(ctx, j, updateRunning, update{}, nil)
	switch {
	case err == nil:
		if kill {
			log.Info("webapp asked to kill job", "pid", p.Pid(), "grace", m.cfg.KillGrace)
			p.Kill(m.cfg.KillGrace)
		}
		return true
	case ctx.Err() != nil, retryable(err):
		log.Warn("cannot confirm job; the next update will", "err", err)
		return true
	default:
		log.Warn("webapp refused confirmation; killing job", "err", err, "pid", p.Pid())
		p.Kill(m.cfg.KillGrace)
		log.Info("job killed", "exit", p.Wait())
		return false
	}
}
