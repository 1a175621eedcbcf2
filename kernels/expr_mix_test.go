package kernels

// The random expression tests (TestExprRandom, FuzzExpr) also draw the
// string and time functions, mixed with every other operator, checked
// against refStringTimeFuncs.
func init() {
	extraRefFuncs = refStringTimeFuncs
	extraExprGen = mixStringTime
}

// extraRefType is the reference result type of a string or time function.
func extraRefType(name string, args []rt) (rt, bool) {
	switch name {
	case "lower", "upper", "concat", "concat_ws", "substring", "split_index", "regexp_extract", "date_format":
		return rt{k: 's'}, true
	case "char_length", "character_length":
		return rt{k: 'i'}, true
	case "like":
		return rt{k: 'b'}, true
	case "extract":
		return rt{k: 'l'}, true
	case "floor_time", "ceil_time":
		return args[0], true
	}
	return rt{}, false
}

func mixStringTime(g *exprGen, kind byte, d int) Expr {
	s := func() Expr { return g.expr('s', d) }
	switch kind {
	case 's':
		switch g.pick(7) {
		case 0:
			return Call("lower", s())
		case 1:
			return Call("upper", s())
		case 2:
			return Call("concat", s(), s())
		case 3:
			if g.pick(2) == 0 {
				return Call("substring", s(), Lit(int64(g.pick(8)-2)))
			}
			return Call("substring", s(), Lit(int64(g.pick(8)-2)), Lit(int64(g.pick(5))))
		case 4:
			return Call("split_index", s(), Lit([]string{" ", "b", "%"}[g.pick(3)]), Lit(int64(g.pick(3))))
		case 5:
			return Call("regexp_extract", s(), Lit("(a)(b)?"), Lit(int64(g.pick(3))))
		default:
			return Call("date_format", Col("tsu"), Lit([]string{"yyyy-MM-dd HH:mm", "EEE d MMM yy", "HH:mm:ss.SSS"}[g.pick(3)]))
		}
	case 'i':
		return Call("char_length", s())
	case 'b':
		return Call("like", s(), Lit([]string{"a%", "%b%c", "_", "%ß", "x\\_y"}[g.pick(5)]))
	case 'l':
		return Call("extract", Lit([]string{"HOUR", "DAY", "DOW", "YEAR", "EPOCH"}[g.pick(5)]), Col("tsu"))
	case 't':
		return Call([]string{"floor_time", "ceil_time"}[g.pick(2)], Col("tsu"), Lit([]string{"HOUR", "DAY", "MONTH"}[g.pick(3)]))
	}
	return nil
}
