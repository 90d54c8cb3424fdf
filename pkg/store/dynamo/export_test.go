package dynamo

// IndexItemForTest exposes the index item codec to the external test package.
var IndexItemForTest = indexItem
