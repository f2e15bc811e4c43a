package validate

import (
	"strconv"
	"strings"
)

// A Path names a value inside a document: string elements are object keys, int elements are
// list indices. The rules name fields with paths from the spec's root ("spec"); the decoder
// prefixes the document's own path and maps the result to a line of the file.
type Path []any

// With returns a new path: p followed by elems. p itself is never modified.
func (p Path) With(elems ...any) Path {
	out := make(Path, 0, len(p)+len(elems))
	return append(append(out, p...), elems...)
}

// String formats the path the way kubectl does: spec.ports[0].targetPort.
func (p Path) String() string {
	var b strings.Builder
	for _, e := range p {
		switch e := e.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(e) + "]")
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(e)
		}
	}
	return b.String()
}
