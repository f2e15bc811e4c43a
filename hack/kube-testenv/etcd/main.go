// Command etcd is etcd's server, built at the version this module pins (kube-apiserver 1.37 speaks
// the etcd 3.7 client API; Debian bookworm ships 3.4).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
