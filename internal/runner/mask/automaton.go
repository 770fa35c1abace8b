package mask

// maxDenseEntries bounds the dense transition table (4 bytes an entry): states are numbered
// breadth first, and the shallowest states that fit get a full row (one lookup a byte). Deeper
// states, reached only while the output matches a long prefix of some secret, keep their trie
// edges and follow failure links, which is still linear overall. With typical secrets every state
// is dense.
const maxDenseEntries = 1 << 20

// matcher is an Aho–Corasick automaton over the patterns. State 0 is the root (nothing matched).
//
// The scanning loop works on codes rather than state numbers, so that each byte costs one
// dependent load: the code of a dense state is the offset of its row in table, the code of a
// sparse state s is len(table)+s-nDense, and matchFlag is set on the code of every state where a
// pattern ends.
type matcher struct {
	class  [256]uint8 // byte → equivalence class; bytes in no pattern share one class
	nclass int

	nDense int32   // states [0, nDense) have a dense row
	table  []int32 // table[s*nclass+c] = code of the next state
	code   []int32 // state → code (with matchFlag)

	// Sparse states: edges[edgeStart[s-nDense]:edgeStart[s-nDense+1]].
	edgeStart []int32
	edges     []edge
	fail      []int32

	// hold is how much output to hold back in a state: the length of the longest suffix of the
	// input that is a proper prefix of some pattern, i.e. the deepest state on the failure chain
	// that has children. A complete secret that no longer secret extends is not held back.
	hold   []int32
	outLen []int32 // length of the longest pattern ending at this state, 0 if none
}

const (
	matchFlag = -1 << 31 // set on the code of a state where a pattern ends
	codeMask  = 1<<31 - 1
)

type edge struct {
	class uint8
	to    int32
}

// trieNode is used while building.
type trieNode struct {
	kids     []edge // class → node
	depth    int32
	terminal bool
}

func (n *trieNode) child(c uint8) (int32, bool) {
	for _, k := range n.kids {
		if k.class == c {
			return k.to, true
		}
	}
	return 0, false
}

// newMatcher builds the automaton; at most maxDense transition entries are dense (see
// maxDenseEntries; tests pass small values to exercise the sparse states).
func newMatcher(patterns [][]byte, maxDense int) *matcher {
	m := &matcher{}
	// Byte classes: one per byte that occurs in a pattern, one for all the others.
	var used [256]bool
	for _, p := range patterns {
		for _, b := range p {
			used[b] = true
		}
	}
	other := -1
	for b := range 256 {
		if used[b] {
			m.class[b] = uint8(m.nclass)
			m.nclass++
		}
	}
	if m.nclass < 256 {
		other = m.nclass
		m.nclass++
	}
	for b := range 256 {
		if !used[b] {
			m.class[b] = uint8(other)
		}
	}

	// Trie.
	nodes := []trieNode{{}}
	for _, p := range patterns {
		n := int32(0)
		for _, b := range p {
			c := m.class[b]
			next, ok := nodes[n].child(c)
			if !ok {
				next = int32(len(nodes))
				nodes = append(nodes, trieNode{depth: nodes[n].depth + 1})
				nodes[n].kids = append(nodes[n].kids, edge{class: c, to: next})
			}
			n = next
		}
		nodes[n].terminal = true
	}

	// Number the states breadth first, so that a state's failure target (shallower) and its
	// parent come before it, and the dense states are the shallowest.
	order := make([]int32, 0, len(nodes)) // state → trie node
	id := make([]int32, len(nodes))       // trie node → state
	order = append(order, 0)
	for i := 0; i < len(order); i++ {
		for _, k := range nodes[order[i]].kids {
			id[k.to] = int32(len(order))
			order = append(order, k.to)
		}
	}
	ns := len(order)
	m.nDense = int32(min(ns, max(1, maxDense/m.nclass)))
	m.table = make([]int32, int(m.nDense)*m.nclass) // state numbers while building, codes after
	m.fail = make([]int32, ns)
	m.hold = make([]int32, ns)
	m.outLen = make([]int32, ns)
	m.edgeStart = make([]int32, 0, ns-int(m.nDense)+1)
	for s := int(m.nDense); s < ns; s++ {
		m.edgeStart = append(m.edgeStart, int32(len(m.edges)))
		for _, k := range nodes[order[s]].kids {
			m.edges = append(m.edges, edge{class: k.class, to: id[k.to]})
		}
	}
	m.edgeStart = append(m.edgeStart, int32(len(m.edges)))

	// Failure links and dense rows, breadth first. The root's missing edges loop to the root.
	for s := range ns {
		n := &nodes[order[s]]
		if s < int(m.nDense) {
			row := m.table[s*m.nclass : (s+1)*m.nclass]
			if s != 0 {
				copy(row, m.table[int(m.fail[s])*m.nclass:]) // fail[s] < s, already filled
			}
			for _, k := range n.kids {
				row[k.class] = id[k.to]
			}
		}
		for _, k := range n.kids {
			t := id[k.to]
			if s == 0 {
				m.fail[t] = 0
			} else {
				m.fail[t] = m.step(m.fail[s], k.class)
			}
		}
		if len(n.kids) > 0 {
			m.hold[s] = n.depth
		} else {
			m.hold[s] = m.hold[m.fail[s]]
		}
		if n.terminal {
			m.outLen[s] = n.depth
		} else if s != 0 {
			m.outLen[s] = m.outLen[m.fail[s]]
		}
	}

	// Switch the table from state numbers to codes.
	m.code = make([]int32, ns)
	for s := range m.code {
		if s < int(m.nDense) {
			m.code[s] = int32(s * m.nclass)
		} else {
			m.code[s] = int32(len(m.table) + s - int(m.nDense))
		}
		if m.outLen[s] != 0 {
			m.code[s] |= matchFlag
		}
	}
	for i, s := range m.table {
		m.table[i] = m.code[s]
	}
	return m
}

// step returns the state after reading a byte of class c in state s. It is used while building,
// when table holds state numbers, for states whose rows are complete.
func (m *matcher) step(s int32, c uint8) int32 {
	for s >= m.nDense {
		i := s - m.nDense
		for _, e := range m.edges[m.edgeStart[i]:m.edgeStart[i+1]] {
			if e.class == c {
				return e.to
			}
		}
		s = m.fail[s]
	}
	return m.table[int(s)*m.nclass+int(c)]
}

// state returns the state of a code (without matchFlag).
func (m *matcher) state(code int32) int32 {
	if int(code) < len(m.table) {
		return code / int32(m.nclass)
	}
	return code - int32(len(m.table)) + m.nDense
}

// stepSparse returns the code after reading a byte of class c in the sparse state of code.
func (m *matcher) stepSparse(code int32, c uint8) int32 {
	s := m.state(code)
	for s >= m.nDense {
		i := s - m.nDense
		for _, e := range m.edges[m.edgeStart[i]:m.edgeStart[i+1]] {
			if e.class == c {
				return m.code[e.to]
			}
		}
		s = m.fail[s]
	}
	return m.table[int(s)*m.nclass+int(c)]
}
