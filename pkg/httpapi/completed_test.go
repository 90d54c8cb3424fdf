package httpapi_test

import (
	"fmt"
	"testing"
)

// TestCommitCompletedRanges: a commit's completed ranges come back with the next lease;
// every malformed set is 400 and changes nothing; a commit without them clears them.
func TestCommitCompletedRanges(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 1)
	var recs []rec
	for i := 0; i < 10; i++ {
		recs = append(recs, rec{value: fmt.Sprint(i), partition: ptr(0)})
	}
	e.call("POST", "/v1/topics/t/records", appendBody(recs...)).want(t, 200)
	e.call("POST", gp+"0/lease", lease("m-1")).want(t, 200)
	commit := func(completed any) *resp {
		body := lease("m-1", "generation", 1, "next_offset", 2)
		if completed != nil {
			body["completed"] = completed
		}
		return e.call("POST", gp+"0/commit", body)
	}
	wantLease := func(what, want string) {
		t.Helper()
		r := e.call("POST", gp+"0/lease", lease("m-1", "generation", 1)).want(t, 200)
		if got := fmt.Sprint(r.body["completed"]); r.num("committed_offset") != 2 || got != want {
			t.Fatalf("%s: lease %s, want committed_offset 2 and completed %s", what, r.raw, want)
		}
	}
	commit([][]int64{{4, 6}, {8, 9}}).want(t, 200)
	wantLease("after a commit with completed ranges", "[[4 6] [8 9]]")

	many := make([][]int64, 65)
	for i := range many {
		many[i] = []int64{int64(3 + 2*i), int64(4 + 2*i)}
	}
	for name, bad := range map[string]any{
		"65 ranges":           many,
		"unsorted":            [][]int64{{8, 9}, {4, 6}},
		"overlapping":         [][]int64{{4, 6}, {5, 7}},
		"touching":            [][]int64{{4, 6}, {6, 7}},
		"at next_offset":      [][]int64{{2, 3}},
		"below next_offset":   [][]int64{{0, 1}},
		"empty":               [][]int64{{5, 5}},
		"reversed":            [][]int64{{6, 5}},
		"three bounds":        [][]int64{{4, 5, 6}},
		"one bound":           [][]int64{{4}},
		"no bounds":           [][]int64{{}},
		"not a list":          "4-6",
		"fractional":          [][]float64{{4.5, 6}},
		"beyond the HW":       [][]int64{{9, 11}},
		"a range not a list":  []any{map[string]int{"from": 4, "to": 6}},
		"negative above none": [][]int64{{-5, -3}},
	} {
		commit(bad).want(t, 400, "invalid_request")
		wantLease("after a refused commit with "+name, "[[4 6] [8 9]]")
	}
	commit(nil).want(t, 200)
	wantLease("after a commit without completed ranges", "<nil>")
}
