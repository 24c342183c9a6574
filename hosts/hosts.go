package hosts

import (
	"context"
)

// Repo is a repository that an Upstream Host lists.
type Repo struct {
	// Path is the repository's path on the host, such as "group/sub/name",
	// without ".git".
	Path string
	// CloneURL is the URL to mirror it from, for the host section's
	// protocol. It may carry credentials; show it only through
	// redact.URLs.
	CloneURL      string
	Description   string
	DefaultBranch string
}

// Lister lists the repositories of an Upstream Host.
type Lister interface {
	List(ctx context.Context) ([]Repo, error)
}

// DownstreamRepo is a repository to prepare on the Downstream Host.
type DownstreamRepo struct {
	Path          string // the lorry path
	Description   string // from the upstream, if known
	DefaultBranch string // from the upstream, if known
}
