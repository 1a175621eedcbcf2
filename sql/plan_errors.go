package sql

import "fmt"

// semErrorf is an error found while planning a parsed script (an unknown
// table, a type mismatch, an unsupported construct), at the position of
// the construct. Compile fills in the source line.
func semErrorf(pos Pos, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// hinted returns e with a hint.
func hinted(e *Error, hint string) *Error {
	e.Hint = hint
	return e
}
