package appset

// ReadParamFile exposes readParamFile to the fuzz tests.
var ReadParamFile = readParamFile
