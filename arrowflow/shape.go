package arrowflow

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// Shape describes the graph as checkpoints record it, one line per node
// in the order the nodes were added: its kind and name, and per input the
// upstream node (and side output), with the key columns of keyed inputs.
// Parallelism and whether an unkeyed input is forwarded or rebalanced are
// left out: a job keeps its shape when it is rescaled.
func (g *Graph) Shape() []string {
	lines := make([]string, 0, len(g.nodes))
	for _, n := range g.nodes {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %q", n.kind, n.name)
		for i, in := range n.inputs {
			if i == 0 {
				b.WriteString(" <-")
			} else {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %q", in.From.name)
			if in.Side != "" {
				fmt.Fprintf(&b, "[side %q]", in.Side)
			}
			switch in.Kind {
			case KeyedEdge:
				fmt.Fprintf(&b, " keyed by %q", in.Keys)
			case BroadcastEdge:
				b.WriteString(" broadcast")
			}
		}
		lines = append(lines, b.String())
	}
	return lines
}

// Fingerprint is a short hash of the graph's Shape: equal for the same
// job at any parallelism, different when nodes, their names or their
// connections change.
func (g *Graph) Fingerprint() string { return ShapeFingerprint(g.Shape()) }

// ShapeFingerprint hashes a Shape.
func ShapeFingerprint(shape []string) string {
	h := sha256.Sum256([]byte(strings.Join(shape, "\n")))
	return hex.EncodeToString(h[:8])
}

// ShapeDiff lists the lines of old missing from new ("- ...") and those
// of new missing from old ("+ ..."), for an error message.
func ShapeDiff(old, new []string) []string {
	var d []string
	for _, l := range old {
		if !slices.Contains(new, l) {
			d = append(d, "- "+l)
		}
	}
	for _, l := range new {
		if !slices.Contains(old, l) {
			d = append(d, "+ "+l)
		}
	}
	return d
}
