package validate

// headerValueError says why Envoy's header formatter would reject a header value that a route
// sets or adds, as istiod's ValidateHTTPHeaderValue does (a port of Envoy's
// router/header_parser.cc); "" for a value it accepts. In a value '%' starts a substitution,
// %NAME% or %NAME(ARGS)%, and "%%" is a literal '%'. ARGS is either one bare argument,
// %REQ(x-id)%, or a JSON array of strings, %NAME(["a", "b"])%; spaces may surround the
// array's parts. Which names Envoy knows is not checked (istiod does not either).
func headerValueError(v string) string {
	const (
		text       = iota // plain text, looking for '%'
		name              // after '%': the name, up to '%' or '('
		args              // after '(': spaces, then '[' or a bare argument
		nextString        // in the array: spaces, then '"'
		inString          // inside an argument, up to '"', or ')' that ends the arguments
		afterItem         // after a string in the array: spaces, then ',' or ']'
		closeParen        // after ']': spaces, then ')'
		closeVar          // after ')': spaces, then '%'
	)
	const fix = "write %NAME%, %NAME(arg)% or %NAME([\"a\", \"b\"])%, and %% for a literal percent sign"
	state := text
	for i := 0; i < len(v); i++ {
		ch := v[i]
		switch state {
		case text:
			switch {
			case ch != '%':
			case i == len(v)-1:
				return "ends with a lone '%', which Envoy reads as the start of a %VARIABLE%: write %% for a literal percent sign (100%%)"
			case v[i+1] == '%':
				i++ // "%%": a literal '%'
			default:
				state = name
			}
		case name:
			switch ch {
			case '%':
				state = text
			case '(':
				state = args
			}
		case args:
			switch ch {
			case '[':
				state = nextString
			case ' ':
			default:
				state = inString // a bare argument; this character is its first
			}
		case nextString:
			switch ch {
			case '"':
				state = inString
			case ' ':
			default:
				return "has an argument array whose items are not quoted strings: " + fix
			}
		case inString:
			switch ch {
			case '\\':
				if i == len(v)-1 {
					return "ends inside an argument with a lone '\\': finish the argument and the %VARIABLE(...)% expression"
				}
				i++ // the escaped character
			case ')':
				state = closeVar
			case '"':
				state = afterItem
			}
		case afterItem:
			switch ch {
			case ',':
				state = nextString
			case ']':
				state = closeParen
			case ' ':
			default:
				return "has an argument array with something other than ',' or ']' after an item: " + fix
			}
		case closeParen:
			switch ch {
			case ')':
				state = closeVar
			case ' ':
			default:
				return "has something other than ')' after an argument array: " + fix
			}
		case closeVar:
			switch ch {
			case '%':
				state = text
			case ' ':
			default:
				return "has something other than '%' after a %VARIABLE(...)%'s arguments: " + fix
			}
		}
	}
	if state != text {
		return "has a '%' that starts a %VARIABLE% which never ends: close it (%DOWNSTREAM_REMOTE_ADDRESS%), or write %% for a literal percent sign"
	}
	return ""
}
