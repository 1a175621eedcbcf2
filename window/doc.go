// Package window is event time's machinery: window specs (tumbling, and
// hopping computed from panes of gcd(size, slide) so that each row is
// aggregated once however many windows it belongs to) and the windowed
// aggregate operator (Aggregate), whose state is one kernels.GroupBy per
// pane, snapshotted by key group so a job can restore into another
// parallelism.
//
// Semantics follow Flink's event-time windows: a window [start, end) fires
// once, when the watermark reaches its last instant (end minus one tick of
// the event-time column) plus the allowed lateness; a row is late, counted
// and dropped, when every window it belongs to has fired; a row whose
// earlier windows have fired still counts in its later ones.
//
// Still to come (issue 4): session windows, processing-time windows, a
// late-data output, watermark generation with idle splits, and a state
// memory budget.
package window
