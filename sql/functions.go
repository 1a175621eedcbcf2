package sql

import (
	"slices"
	"strings"
)

// functionClasses maps the identifiers CREATE FUNCTION ... AS
// 'identifier' may name to the weir built-in (a kernels function) that
// computes the same thing. In Flink the identifier is a Java class on
// the classpath; weir runs no JVM, so the classes of the benchmark suites
// it runs are listed here with their built-in equivalent. A built-in's
// own name (count_char, upper, ...) is accepted too.
var functionClasses = map[string]string{
	// Nexmark's q14: the number of occurrences of a character in a
	// string, counted as the class does (one character, case-sensitive).
	"com.github.nexmark.flink.udf.CountChar": "count_char",
}

// builtinFunction returns the kernels function an identifier names: a
// class of functionClasses, or a built-in function's name (case
// insensitive).
func builtinFunction(identifier string) (string, bool) {
	if fn, ok := functionClasses[identifier]; ok {
		return fn, true
	}
	if fn := strings.ToLower(identifier); kernelsFuncs[fn] {
		return fn, true
	}
	return "", false
}

// knownFunctionClasses lists functionClasses' identifiers, sorted.
func knownFunctionClasses() []string {
	out := make([]string, 0, len(functionClasses))
	for k := range functionClasses {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// bindFunctions applies a script's CREATE FUNCTION and DROP FUNCTION
// statements: each call of a function created by name in a later
// statement is rewritten to call the built-in the identifier names, and
// the statements themselves are removed from the returned script (they
// leave nothing else to plan). Function names are case-insensitive, as
// Flink's; a DROP FUNCTION ends the binding for the statements after it.
// An identifier weir does not know is an error at its CREATE FUNCTION.
func bindFunctions(script *Script) (*Script, error) {
	bound := map[string]string{} // upper-case name -> kernels function
	out := &Script{Pos: script.Pos}
	for _, st := range script.Statements {
		switch s := st.(type) {
		case *CreateFunction:
			name := functionKey(s.Name)
			if _, ok := bound[name]; ok {
				if s.IfNotExists {
					continue
				}
				return nil, semErrorf(s.Pos, "function %s already exists", s.Name)
			}
			fn, ok := builtinFunction(s.Identifier)
			if !ok {
				return nil, hinted(semErrorf(s.Pos, "CREATE FUNCTION %s AS '%s': weir cannot load Java classes, jars or Python code", s.Name, s.Identifier),
					"the identifiers weir knows are "+strings.Join(knownFunctionClasses(), ", ")+
						" and the names of its built-in functions (docs/sql.md); registering Go functions when embedding weir is not available yet")
			}
			bound[name] = fn
			continue
		case *Drop:
			if s.Kind != FunctionObject {
				break
			}
			name := functionKey(s.Name)
			if _, ok := bound[name]; !ok && !s.IfExists {
				return nil, semErrorf(s.Pos, "DROP FUNCTION: %s does not exist", s.Name)
			}
			delete(bound, name)
			continue
		}
		if len(bound) > 0 {
			Inspect(st, func(n Node) bool {
				if f, ok := n.(*FuncCall); ok && f.Over == nil {
					if fn, ok := bound[functionKey(f.Name)]; ok {
						f.Name = &ObjectName{Pos: f.Name.Pos, Parts: []*Ident{{Pos: f.Name.Pos, Name: fn}}}
					}
				}
				return true
			})
		}
		out.Statements = append(out.Statements, st)
	}
	return out, nil
}

// functionKey is a function name compared case-insensitively.
func functionKey(n *ObjectName) string {
	parts := make([]string, len(n.Parts))
	for i, id := range n.Parts {
		parts[i] = strings.ToUpper(id.Name)
	}
	return strings.Join(parts, ".")
}
