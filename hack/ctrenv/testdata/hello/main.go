// Command hello is what ctrenv's image tests put in an image in place of freshet: it prints
// what the image's contract promises (user, working directory, the CA bundle, /tmp) so the
// test can check it by running the image.
package main

import (
	"fmt"
	"os"

	"github.com/freshet-dev/freshet/internal/version"
)

func main() {
	wd, _ := os.Getwd()
	_, caErr := os.Stat("/etc/ssl/certs/ca-certificates.crt")
	tmp, tmpErr := os.CreateTemp("", "hello-")
	if tmpErr == nil {
		tmp.Close()
		os.Remove(tmp.Name())
	}
	fmt.Printf("hello version=%s uid=%d gid=%d wd=%s home=%s ca=%v tmp=%v args=%q\n", version.Version, os.Getuid(), os.Getgid(), wd, os.Getenv("HOME"), caErr == nil, tmpErr == nil, os.Args[1:])
}
