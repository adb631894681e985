/**
 * The SPDY/3 header compression dictionary (SPDY draft 3, §2.6.10.1): 1423 bytes, Adler-32
 * 0xE3C6A7C2. Built here from its two parts instead of being spelled out as a byte table.
 * @module
 */

// Header names and common values, each written as a 32-bit big-endian length and the bytes.
const PREFIXED_WORDS = (
  "options|head|post|put|delete|trace|accept|accept-charset|accept-encoding|" +
  "accept-language|accept-ranges|age|allow|authorization|cache-control|connection|" +
  "content-base|content-encoding|content-language|content-length|content-location|" +
  "content-md5|content-range|content-type|date|etag|expect|expires|from|host|if-match|" +
  "if-modified-since|if-none-match|if-range|if-unmodified-since|last-modified|location|" +
  "max-forwards|pragma|proxy-authenticate|proxy-authorization|range|referer|retry-after|" +
  "server|te|trailer|transfer-encoding|upgrade|user-agent|vary|via|warning|" +
  "www-authenticate|method|get|status|200 OK|version|HTTP/1.1|url|public|set-cookie|" +
  "keep-alive|origin"
).split("|");

// Followed by this run of status codes, reason phrases, dates and content types, unprefixed.
const TAIL = "100101201202205206300302303304305306307402405406407408409410411412413414415416417" +
  "502504505203 Non-Authoritative Information204 No Content301 Moved Permanently" +
  "400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error" +
  "501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec" +
  " 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg," +
  "image/gif,application/xml,application/xhtml+xml,text/plain,text/javascript," +
  "publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";

function build(): Uint8Array {
  const encoder = new TextEncoder();
  const parts: number[] = [];
  for (const word of PREFIXED_WORDS) {
    const bytes = encoder.encode(word);
    parts.push(0, 0, 0, bytes.length, ...bytes);
  }
  parts.push(...encoder.encode(TAIL));
  return Uint8Array.from(parts);
}

/** The dictionary bytes; treat as read-only. */
export const SPDY3_DICTIONARY: Uint8Array = build();
