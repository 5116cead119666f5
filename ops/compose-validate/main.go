// compose-validate loads a compose file with compose-go (the loader of Docker Compose v2),
// validating it against the Compose specification, and prints the services it defines.
package main

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: compose-validate docker-compose.yml")
		os.Exit(2)
	}
	opts, err := cli.NewProjectOptions([]string{os.Args[1]}, cli.WithOsEnv, cli.WithName("streamfs"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "invalid compose file:", err)
		os.Exit(1)
	}
	names := project.ServiceNames()
	sort.Strings(names)
	for _, name := range names {
		fmt.Println(name)
	}
}
