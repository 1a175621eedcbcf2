// Package window is event time's machinery: window specs (tumbling;
// hopping, computed from panes of gcd(size, slide) so that each row is
// aggregated once however many windows it belongs to; cumulating, Flink's
// CUMULATE, computed from panes of the step, each window of a period
// extending the previous one's merge by its new panes; session, merged per
// key), the windowed aggregate operator (Aggregate), whose state is
// columnar (kernels.GroupBy) and snapshotted by key group so a job can
// restore into another parallelism, and SplitWatermarks, the per-split
// watermark generator with idleness for sources.
//
// Semantics follow Flink's event-time windows: a window [start, end) fires
// once, when the watermark reaches its last instant (end minus one tick of
// the event-time column) plus the allowed lateness; a row is late, counted
// and dropped, when every window it belongs to has fired; a row whose
// earlier windows have fired still counts in its later ones.
//
// Late rows are counted and, when Aggregate.LateOutput is set, sent to a
// side output of that name. Aggregate.ProcessingTime makes windows tumble,
// hop or cumulate over processing time instead.
//
// An event-time Aggregate over tumbling, hopping or cumulating windows can
// also run in two phases (Flink's local-global aggregation), for
// aggregates without keys or with few, which one subtask would otherwise
// compute alone: Aggregate.Local runs beside the source at any parallelism
// and emits each fired window's partial state (kernels.GroupBy state
// columns), and the FinalAggregate from Aggregate.Final, keyed by the keys
// or at parallelism 1 without them, merges the partials and emits the
// one-phase aggregate's results. Sessions and processing time have no
// two-phase form (ErrTwoPhaseUnsupported).
//
// Join joins two keyed streams within the same window (inner, outer, semi
// and anti), and TopN keeps the first N rows per window and partition
// (with ties, in two phases for whole-window rankings); both keep their
// state columnar and rescalable like Aggregate. Only Aggregate takes
// cumulating windows so far; TopN ranks their results as windowed input.
//
// IntervalJoin joins rows whose times lie within an interval of each
// other; TemporalJoin is Flink's event-time temporal join (FOR SYSTEM_TIME
// AS OF): the right input is a versioned table, each right row the new
// version of its key from its time on, and each left row meets the version
// valid at its time, once the watermark reaches it. Rows at or behind the
// watermark are late on either side (a late version would change results
// already emitted); of two versions with one time the later arrival wins.
// A key keeps only the versions a row still to come can meet: the latest
// at or before the watermark and the later ones.
package window
