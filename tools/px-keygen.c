/* px-keygen.c - make a CURVE key pair for the ZeroMQ endpoint.
 *
 *   px_keygen > server.key     a new pair: the output is a valid
 *                              transports.zmq.secret_key_file (the secret
 *                              key line) with the public key in a comment
 *   px_keygen --public < KEY   print the public key of a secret key file
 *
 * The secret key file must then be made readable by the service account
 * only (Linux: chmod 600, owned by root or the service user; Windows: owner
 * and DACL SYSTEM/Administrators only), or the service refuses to start.
 * Clients get the server's public key; the server's allow-list
 * (transports.zmq.client_keys) gets each client's public key.
 */
#include <zmq.h>

#include <stdio.h>
#include <string.h>

static void wipe(void *p, size_t n) {
  volatile unsigned char *v = p;
  while (n--)
    *v++ = 0;
}

static int print_public(void) {
  char line[256], pub[41], secret[41] = "";
  int found = 0, rc = 1;
  while (fgets(line, sizeof line, stdin)) {
    size_t n = strcspn(line, "\r\n");
    line[n] = '\0';
    if (n == 0 || line[0] == '#') /* no 32-byte Z85 key starts with '#' */
      continue;
    if (found++ || n != 40)
      break;
    memcpy(secret, line, 41);
  }
  if (found == 1 && zmq_curve_public(pub, secret) == 0) {
    printf("%s\n", pub);
    rc = 0;
  } else {
    fprintf(stderr, "px_keygen: expected one line with a 40-character Z85 "
                    "secret key on stdin\n");
  }
  wipe(line, sizeof line);
  wipe(secret, sizeof secret);
  return rc;
}

int main(int argc, char **argv) {
  char pub[41], secret[41];
  if (!zmq_has("curve")) {
    fprintf(stderr, "px_keygen: this libzmq was built without CURVE\n");
    return 1;
  }
  if (argc == 2 && strcmp(argv[1], "--public") == 0)
    return print_public();
  if (argc != 1) {
    fprintf(stderr,
            "usage: px_keygen > KEYFILE | px_keygen --public < KEYFILE\n");
    return 2;
  }
  if (zmq_curve_keypair(pub, secret) != 0) {
    fprintf(stderr, "px_keygen: zmq_curve_keypair failed: %s\n",
            zmq_strerror(zmq_errno()));
    return 1;
  }
  printf(
      "# PhoenixExecutor CURVE key pair (px_keygen). Keep this file secret.\n"
      "# public-key: %s\n%s\n",
      pub, secret);
  wipe(secret, sizeof secret);
  return fflush(stdout) == 0 ? 0 : 1;
}
