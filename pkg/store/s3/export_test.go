package s3

// MapErrorForTest exposes mapError to the external test package.
var MapErrorForTest = mapError
