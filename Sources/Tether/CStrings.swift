import CTetherSystem

/// The bytes of a C string, reading at most `limit + 1` bytes (never past a missing NUL
/// further than that): a string longer than `limit` comes back `limit + 1` bytes long, so
/// the caller's length check refuses it.
func cStringBytes(_ pointer: UnsafePointer<CChar>, limit: Int) -> [UInt8] {
  let length = strnlen(pointer, limit + 1)
  return Array(UnsafeRawBufferPointer(start: pointer, count: length))
}

/// A static C string for the `*_name` functions.
func cString(_ text: StaticString) -> UnsafePointer<CChar> {
  UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
}
