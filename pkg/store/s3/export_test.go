package s3

// MapErrorForTest exposes mapError to the external test package.
var MapErrorForTest = mapError

// KeyErrorsForTest exposes keyErrors to the external test package.
var KeyErrorsForTest = keyErrors
