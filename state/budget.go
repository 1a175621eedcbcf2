package state

import (
	"fmt"
	"sync"
)

// MemoryBudget bounds the memory all stateful operators of a job may hold
// in state. Each operator subtask reports its current state size through
// its own BudgetAccount; when the sum exceeds the limit, the report that
// crossed it fails with an error naming the operator and the budget (weir
// does not spill state to disk yet, so failing clearly beats being killed
// for running out of memory). It is safe for concurrent use.
type MemoryBudget struct {
	limit int64 // 0: unlimited

	mu       sync.Mutex
	used     int64
	accounts map[string]*BudgetAccount
}

// NewMemoryBudget returns a budget of limit bytes; 0 means no limit (sizes
// are still tracked, for metrics).
func NewMemoryBudget(limit int64) *MemoryBudget {
	return &MemoryBudget{limit: limit, accounts: map[string]*BudgetAccount{}}
}

// Limit is the budget in bytes (0: unlimited).
func (b *MemoryBudget) Limit() int64 { return b.limit }

// Used is the state memory all accounts report now, in bytes.
func (b *MemoryBudget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Usage returns each account's current bytes and keys, by account name.
func (b *MemoryBudget) Usage() map[string]Usage {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]Usage, len(b.accounts))
	for name, a := range b.accounts {
		out[name] = Usage{Bytes: a.bytes, Keys: a.keys}
	}
	return out
}

// Usage is one account's state size.
type Usage struct {
	Bytes int64 // approximate memory held
	Keys  int64 // number of keys (groups) held
}

// Account returns the account for one operator subtask, named e.g.
// "count-per-key[2]"; the same name gives the same account.
func (b *MemoryBudget) Account(operator string, subtask int) *BudgetAccount {
	name := fmt.Sprintf("%s[%d]", operator, subtask)
	b.mu.Lock()
	defer b.mu.Unlock()
	if a, ok := b.accounts[name]; ok {
		return a
	}
	a := &BudgetAccount{budget: b, operator: operator, subtask: subtask}
	b.accounts[name] = a
	return a
}

// BudgetAccount is one operator subtask's share of a MemoryBudget.
type BudgetAccount struct {
	budget   *MemoryBudget
	operator string
	subtask  int
	bytes    int64 // guarded by budget.mu
	keys     int64
}

// Set reports the subtask's current state size. It fails when the job's
// total then exceeds the budget; the sizes are recorded either way.
func (a *BudgetAccount) Set(bytes, keys int64) error {
	if a == nil {
		return nil
	}
	b := a.budget
	b.mu.Lock()
	b.used += bytes - a.bytes
	a.bytes, a.keys = bytes, keys
	used := b.used
	b.mu.Unlock()
	if b.limit > 0 && used > b.limit {
		return fmt.Errorf("state memory budget exceeded: operator %q subtask %d holds %s of state (%d keys); all operators together hold %s, over the job's budget of %s; raise the budget or give the job more parallelism or shorter windows",
			a.operator, a.subtask, byteSize(bytes), keys, byteSize(used), byteSize(b.limit))
	}
	return nil
}

// byteSize formats n bytes for people.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for x := n / unit; x >= unit; x /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
