package sql

// legacyOptionKeys maps the keys of Flink's old connector descriptors
// ('connector.type' = 'filesystem', ...), which scripts written for older
// Flink versions (the Nexmark suite's q13) still use, to the keys of
// today's connector options. The values are the same.
var legacyOptionKeys = []struct{ old, key string }{
	{"connector.type", "connector"},
	{"connector.path", "path"},
	{"format.type", "format"},
}

// mapLegacyKeys renames the legacy keys of o to their new names, keeping
// where they are written (errors about the option point at the old key
// but name the new one). Giving both a legacy key and its new key is an
// error at the later of the two.
func (o *tableOptions) mapLegacyKeys() error {
	for _, lk := range legacyOptionKeys {
		old, key := lk.old, lk.key
		v, ok := o.m[old]
		if !ok {
			continue
		}
		if _, both := o.m[key]; both {
			at := o.at[old]
			if p := o.at[key]; p.Line > at.Line || p.Line == at.Line && p.Col > at.Col {
				at = p
			}
			return hinted(semErrorf(at, "table %s: options '%s' and '%s' are the same option, given twice", o.table, old, key),
				"'"+old+"' is Flink's legacy name of '"+key+"': keep '"+key+"' only")
		}
		o.m[key], o.at[key] = v, o.at[old]
		delete(o.m, old)
		delete(o.at, old)
	}
	return nil
}
