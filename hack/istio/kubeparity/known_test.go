package kubeparity

// knownStatic are the differences from Istio that remain on the corpus files, by file: none
// (docs/kubernetes.md, "Known differences from istiod", lists those the corpus does not
// exercise). A difference that must stay is listed here with its reason.
var knownStatic = map[string][]knownDiff{}
