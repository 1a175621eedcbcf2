package arrowflow

import (
	"errors"
	"fmt"
	"strings"
)

// NodeKind says what a graph node is.
type NodeKind uint8

const (
	// SourceNode reads a Source.
	SourceNode NodeKind = iota + 1
	// OperatorNode runs an Operator.
	OperatorNode
	// SinkNode writes a Sink.
	SinkNode
)

// String names the kind.
func (k NodeKind) String() string {
	switch k {
	case SourceNode:
		return "source"
	case OperatorNode:
		return "operator"
	case SinkNode:
		return "sink"
	}
	return fmt.Sprintf("NodeKind(%d)", uint8(k))
}

// EdgeKind says how rows travel from the subtasks of one node to the
// subtasks of the next.
type EdgeKind uint8

const (
	// ForwardEdge sends subtask i's output to subtask i of the consumer;
	// both must have the same parallelism. When the consumer has no other
	// input and the producer no other consumer, the two are chained into
	// one task.
	ForwardEdge EdgeKind = iota + 1
	// KeyedEdge sends each row to the consumer subtask owning the key group
	// of the row's key columns.
	KeyedEdge
	// RebalanceEdge deals whole batches round-robin to the consumer's
	// subtasks.
	RebalanceEdge
	// BroadcastEdge sends every batch to every consumer subtask.
	BroadcastEdge
)

// String names the kind.
func (k EdgeKind) String() string {
	switch k {
	case ForwardEdge:
		return "forward"
	case KeyedEdge:
		return "keyed"
	case RebalanceEdge:
		return "rebalance"
	case BroadcastEdge:
		return "broadcast"
	}
	return fmt.Sprintf("EdgeKind(%d)", uint8(k))
}

// Input is one input of an operator or sink: the upstream node and how its
// output is distributed. Build inputs with Forward, KeyBy, Rebalance and
// Broadcast.
type Input struct {
	From *Node
	Kind EdgeKind
	// Keys are the key columns of a keyed edge, by name in the upstream
	// node's output schema.
	Keys []string
	// Side names a side output of From (such as a windowed aggregate's late
	// rows) instead of its main output; see FromSide.
	Side string
}

// FromSide makes the input read the named side output of its node instead
// of the main output: an operator emits to it through SideEmitter. A side
// input never chains with its producer.
func (in Input) FromSide(name string) Input {
	in.Side = name
	return in
}

// Forward connects subtask i of from to subtask i of the consumer.
func Forward(from *Node) Input { return Input{From: from, Kind: ForwardEdge} }

// KeyBy partitions from's output by the hash of the named key columns.
func KeyBy(from *Node, keys ...string) Input {
	return Input{From: from, Kind: KeyedEdge, Keys: keys}
}

// Rebalance deals from's batches round-robin over the consumer's subtasks.
func Rebalance(from *Node) Input { return Input{From: from, Kind: RebalanceEdge} }

// Broadcast sends every batch of from to every consumer subtask.
func Broadcast(from *Node) Input { return Input{From: from, Kind: BroadcastEdge} }

// Node is a source, operator or sink in a Graph.
type Node struct {
	graph       *Graph
	id          int
	name        string
	kind        NodeKind
	parallelism int
	source      Source
	factory     OperatorFactory
	sink        Sink
	inputs      []Input
	outputs     []*Node // consumers, in the order they were declared
	mode        ChangelogMode
}

// Name is the node's name, unique in its graph.
func (n *Node) Name() string { return n.name }

// Kind says whether the node is a source, operator or sink.
func (n *Node) Kind() NodeKind { return n.kind }

// Parallelism is the node's number of subtasks.
func (n *Node) Parallelism() int { return n.parallelism }

// SetChangelogMode declares the changelog mode of the node's output (what
// row kinds its batches carry), for the plan's description: Explain marks
// every node and exchange that carries updates. A planner sets it; the
// runtime does not check it. The default is AppendOnly.
func (n *Node) SetChangelogMode(m ChangelogMode) { n.mode = m }

// ChangelogMode is the mode SetChangelogMode declared.
func (n *Node) ChangelogMode() ChangelogMode { return n.mode }

// Inputs are the node's inputs in declaration order.
func (n *Node) Inputs() []Input { return n.inputs }

// Sink is a sink node's Sink (nil for other nodes).
func (n *Node) Sink() Sink { return n.sink }

// Source returns a source node's Source (nil for other nodes).
func (n *Node) Source() Source { return n.source }

// Graph is a job under construction: a DAG of sources, operators and sinks.
// Building records the first mistake and Plan reports it, so a graph can be
// built without checking an error after every call.
type Graph struct {
	name  string
	nodes []*Node
	names map[string]bool
	errs  []error
}

// NewGraph starts an empty job graph.
func NewGraph(name string) *Graph {
	return &Graph{name: name, names: make(map[string]bool)}
}

// Name is the job's name.
func (g *Graph) Name() string { return g.name }

// Nodes lists the graph's nodes in the order they were added (which is a
// topological order: inputs must exist before their consumers).
func (g *Graph) Nodes() []*Node { return g.nodes }

// Source adds a source with the given parallelism.
func (g *Graph) Source(name string, src Source, parallelism int) *Node {
	n := g.add(name, SourceNode, parallelism, nil)
	if src == nil {
		g.errorf("source %q: nil Source", name)
	}
	n.source = src
	return n
}

// Operator adds an operator with the given parallelism reading the given
// inputs (at least one). The input order defines the input index passed to
// Operator.ProcessBatch.
func (g *Graph) Operator(name string, factory OperatorFactory, parallelism int, inputs ...Input) *Node {
	n := g.add(name, OperatorNode, parallelism, inputs)
	if factory == nil {
		g.errorf("operator %q: nil OperatorFactory", name)
	}
	n.factory = factory
	return n
}

// Sink adds a sink with the given parallelism reading the given inputs.
func (g *Graph) Sink(name string, sink Sink, parallelism int, inputs ...Input) *Node {
	n := g.add(name, SinkNode, parallelism, inputs)
	if sink == nil {
		g.errorf("sink %q: nil Sink", name)
	}
	n.sink = sink
	return n
}

func (g *Graph) errorf(format string, args ...any) {
	g.errs = append(g.errs, fmt.Errorf(format, args...))
}

func (g *Graph) add(name string, kind NodeKind, parallelism int, inputs []Input) *Node {
	n := &Node{graph: g, id: len(g.nodes), name: name, kind: kind, parallelism: parallelism, inputs: inputs}
	switch {
	case strings.TrimSpace(name) == "":
		g.errorf("%s #%d: empty name", kind, n.id)
	case g.names[name]:
		g.errorf("%s %q: name already used in the job", kind, name)
	}
	g.names[name] = true
	if parallelism < 1 {
		g.errorf("%s %q: parallelism must be at least 1, got %d", kind, name, parallelism)
	}
	if kind != SourceNode && len(inputs) == 0 {
		g.errorf("%s %q: needs at least one input", kind, name)
	}
	for i, in := range inputs {
		switch {
		case in.From == nil:
			g.errorf("%s %q: input %d: nil node", kind, name, i)
			continue
		case in.From.graph != g:
			g.errorf("%s %q: input %d: node %q belongs to another graph", kind, name, i, in.From.name)
			continue
		case in.From.kind == SinkNode:
			g.errorf("%s %q: input %d: sink %q has no output", kind, name, i, in.From.name)
			continue
		case in.Side != "" && in.From.kind != OperatorNode:
			g.errorf("%s %q: input %d: only operators have side outputs, %q is a %s", kind, name, i, in.From.name, in.From.kind)
			continue
		}
		switch in.Kind {
		case ForwardEdge:
			if in.From.parallelism != parallelism {
				g.errorf("%s %q: forward input from %q needs equal parallelism (%d vs %d); use Rebalance or KeyBy",
					kind, name, in.From.name, in.From.parallelism, parallelism)
			}
		case KeyedEdge:
			if len(in.Keys) == 0 {
				g.errorf("%s %q: keyed input from %q names no key columns", kind, name, in.From.name)
			}
		case RebalanceEdge, BroadcastEdge:
		default:
			g.errorf("%s %q: input %d: unknown edge kind %d", kind, name, i, in.Kind)
		}
		in.From.outputs = append(in.From.outputs, n)
	}
	g.nodes = append(g.nodes, n)
	return n
}

func (g *Graph) validate() error {
	errs := append([]error(nil), g.errs...)
	sources, sinks := 0, 0
	for _, n := range g.nodes {
		switch n.kind {
		case SourceNode:
			sources++
		case SinkNode:
			sinks++
		}
		if n.kind != SinkNode && !mainConsumed(n) {
			errs = append(errs, fmt.Errorf("%s %q: output is not consumed; connect it to an operator or sink", n.kind, n.name))
		}
	}
	if sources == 0 {
		errs = append(errs, errors.New("job has no source"))
	}
	if sinks == 0 {
		errs = append(errs, errors.New("job has no sink"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("job %q: invalid graph: %w", g.name, errors.Join(errs...))
	}
	return nil
}

// mainConsumed reports whether some consumer reads n's main output (side
// outputs alone would drop the main one).
func mainConsumed(n *Node) bool {
	for _, v := range n.outputs {
		for _, in := range v.inputs {
			if in.From == n && in.Side == "" {
				return true
			}
		}
	}
	return false
}
