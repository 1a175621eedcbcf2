package state

import (
	"strings"
	"sync"
	"testing"
)

func TestMemoryBudget(t *testing.T) {
	b := NewMemoryBudget(10 << 20)
	a, c := b.Account("win", 0), b.Account("win", 1)
	if b.Account("win", 0) != a {
		t.Fatal("the same name must give the same account")
	}
	if err := a.Set(6<<20, 100); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(3<<20, 50); err != nil {
		t.Fatal(err)
	}
	err := c.Set(5<<20, 70)
	if err == nil {
		t.Fatal("11 MiB in a 10 MiB budget must fail")
	}
	for _, want := range []string{`operator "win" subtask 1`, "5.0 MiB", "11.0 MiB", "10.0 MiB", "70 keys"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if b.Used() != 11<<20 {
		t.Fatalf("used %d", b.Used())
	}
	if err := a.Set(1<<20, 10); err != nil {
		t.Fatalf("shrinking back under the budget: %v", err)
	}
	if u := b.Usage()["win[1]"]; u.Bytes != 5<<20 || u.Keys != 70 {
		t.Fatalf("usage %+v", u)
	}
	var nilAccount *BudgetAccount
	if err := nilAccount.Set(1<<40, 1); err != nil {
		t.Fatal("a nil account means no budget")
	}
}

func TestMemoryBudgetConcurrent(t *testing.T) {
	b := NewMemoryBudget(0)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		a := b.Account("op", i)
		wg.Go(func() {
			for j := int64(1); j <= 1000; j++ {
				if err := a.Set(j, j); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if b.Used() != 8000 {
		t.Fatalf("used %d, want 8000", b.Used())
	}
}
