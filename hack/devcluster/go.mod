module github.com/freshet-dev/freshet/hack/devcluster

go 1.26.0
