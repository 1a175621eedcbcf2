package arrowflow

import (
	"errors"
	"fmt"
)

// NodeError is a failure of one subtask of a source, operator or sink. The
// error a failed job returns wraps the first NodeError.
type NodeError struct {
	Kind        NodeKind
	Name        string
	Subtask     int // -1 when the failure is not a single subtask's (a commit)
	Parallelism int
	Err         error
}

// Error names the node and subtask, then the cause.
func (e *NodeError) Error() string {
	if e.Subtask < 0 {
		return fmt.Sprintf("%s %q: %v", e.Kind, e.Name, e.Err)
	}
	return fmt.Sprintf("%s %q (subtask %d of %d): %v", e.Kind, e.Name, e.Subtask+1, e.Parallelism, e.Err)
}

// Unwrap returns the cause.
func (e *NodeError) Unwrap() error { return e.Err }

// nodeErr wraps err as a failure of the given node subtask, unless it
// already is one (an error raised downstream in the same chain and passed
// back up through Emit keeps the name of the node that raised it).
func nodeErr(kind NodeKind, name string, subtask, parallelism int, err error) error {
	if err == nil {
		return nil
	}
	var ne *NodeError
	if errors.As(err, &ne) {
		return err
	}
	if errors.Is(err, errGateClosed) {
		return err
	}
	return &NodeError{Kind: kind, Name: name, Subtask: subtask, Parallelism: parallelism, Err: err}
}
