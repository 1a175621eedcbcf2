package arrowflow

import (
	"fmt"
	"strings"

	"github.com/weirflow/weir/state"
)

// chain is a maximal run of nodes joined by chainable forward edges; each
// subtask of a chain is one task.
type chain struct {
	id          int
	nodes       []*Node
	parallelism int
}

func (c *chain) head() *Node { return c.nodes[0] }
func (c *chain) tail() *Node { return c.nodes[len(c.nodes)-1] }

func (c *chain) name() string {
	names := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		names[i] = n.name
		if n.mode != AppendOnly {
			names[i] += " [" + n.mode.String() + "]"
		}
	}
	return strings.Join(names, " -> ")
}

// chainable reports whether v can run in the same task as its only input:
// a forward edge of equal parallelism where the producer has no other
// consumer.
func chainable(v *Node) bool {
	if len(v.inputs) != 1 || v.inputs[0].Kind != ForwardEdge || v.inputs[0].Side != "" {
		return false
	}
	u := v.inputs[0].From
	return len(u.outputs) == 1 && u.parallelism == v.parallelism && u.kind != SinkNode
}

// buildChains groups the graph's nodes into chains. Nodes are in
// topological order, so a node's producer already has its chain.
func buildChains(g *Graph) (chains []*chain, chainOf map[*Node]*chain) {
	chainOf = make(map[*Node]*chain)
	for _, n := range g.nodes {
		if chainable(n) {
			c := chainOf[n.inputs[0].From]
			c.nodes = append(c.nodes, n)
			chainOf[n] = c
			continue
		}
		c := &chain{id: len(chains), nodes: []*Node{n}, parallelism: n.parallelism}
		chains = append(chains, c)
		chainOf[n] = c
	}
	return chains, chainOf
}

// pointwise reports whether an input connects subtask i only to subtask i.
func (in Input) pointwise() bool { return in.Kind == ForwardEdge }

// gateLayout lists, for a chain head's subtask, which input and producer
// subtask each gate channel carries. The layout is the same for every
// subtask except for pointwise inputs, whose single channel comes from the
// producer subtask with the consumer's own index.
type gateLayout struct {
	channelInput []int // channel -> input index of the head node
	firstChannel []int // input index -> first channel of that input
}

func layoutFor(head *Node) gateLayout {
	var l gateLayout
	for i, in := range head.inputs {
		l.firstChannel = append(l.firstChannel, len(l.channelInput))
		count := in.From.parallelism
		if in.pointwise() {
			count = 1
		}
		for k := 0; k < count; k++ {
			l.channelInput = append(l.channelInput, i)
		}
	}
	return l
}

// explain describes the plan: tasks, their parallelism and the exchanges
// between them.
func explain(g *Graph, chains []*chain, chainOf map[*Node]*chain, maxPar int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "job %q: %d nodes in %d chained tasks, max parallelism %d\n", g.name, len(g.nodes), len(chains), maxPar)
	for _, c := range chains {
		fmt.Fprintf(&b, "task %d: %s (parallelism %d)\n", c.id+1, c.name(), c.parallelism)
		for _, in := range c.head().inputs {
			edge := in.Kind.String()
			if in.Kind == KeyedEdge {
				edge = fmt.Sprintf("keyed by [%s] over %d key groups", strings.Join(in.Keys, ", "), maxPar)
			}
			from := in.From.name
			if in.Side != "" {
				from += fmt.Sprintf(", side output %q", in.Side)
			}
			fmt.Fprintf(&b, "  <- %s, %s, from task %d (%s)\n", edge, in.From.mode, chainOf[in.From].id+1, from)
		}
	}
	return b.String()
}

// keyGroupsOf is the key-group range of subtask i of a node.
func keyGroupsOf(n *Node, subtask, maxPar int) state.KeyGroupRange {
	return state.RangeOf(subtask, maxPar, n.parallelism)
}
