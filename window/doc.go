// Package window will hold event time's machinery: watermark generation
// (bounded out-of-orderness per split, idleness), window assigners
// (tumbling, hopping computed from panes, session) and the windowed
// aggregate operator over columnar state. The runtime already carries
// watermarks in order with the data (see arrowflow.EventTime).
package window
