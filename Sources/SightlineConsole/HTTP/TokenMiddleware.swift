import Foundation
import Hummingbird
import SightlineCore

/// With `--token`, every request but `/health`, the login form and its static files needs
/// the token: as
/// `Authorization: Bearer TOKEN` (scripts) or as the `sightline_token` cookie the login form
/// sets (browsers; HttpOnly, SameSite=Strict). A browser asking for a page without it is
/// sent to the login form; anything else gets 401.
struct TokenMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: String
    static var cookieName: String { "sightline_token" }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        let path = request.uri.path
        if path == "/health" || path == "/login" || path.hasPrefix("/static/") || Self.presents(token, request) {
            return try await next(request, context)
        }
        if request.method == .get, request.headers[.accept]?.contains("text/html") == true {
            let target = path.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "/"
            return .redirect(to: "/login?next=\(target)", type: .found)
        }
        var response = Response(status: .unauthorized, headers: [.wwwAuthenticate: "Bearer realm=\"sightline\""])
        response.body = .init(byteBuffer: ByteBuffer(string: "{\"error\":\"this console needs its token\"}"))
        return response
    }

    private static func presents(_ token: String, _ request: Request) -> Bool {
        if let header = request.headers[.authorization], header.hasPrefix("Bearer "),
            constantTimeEqual(String(header.dropFirst(7)), token)
        {
            return true
        }
        return request.cookies[cookieName].map { constantTimeEqual($0.value, token) } ?? false
    }

    /// `GET /login` is the form; `POST /login` checks the token and sets the cookie.
    static func addLogin(to router: Router<Context>, token: String) {
        router.get("/login") { _, _ in try Pages.response("login.html") }
        router.post("/login") { request, _ -> Response in
            var request = request
            let body = try await request.collectBody(upTo: 4096)
            let fields = Dictionary(
                String(buffer: body).split(separator: "&").map { pair -> (String, String) in
                    let parts = pair.split(separator: "=", maxSplits: 1).map {
                        String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
                    }
                    return (parts.first ?? "", parts.count > 1 ? parts[1] : "")
                }, uniquingKeysWith: { first, _ in first })
            guard constantTimeEqual(fields["token"] ?? "", token) else {
                return .redirect(to: "/login?failed=1", type: .found)
            }
            // Only a path on this server, never another site.
            let next = fields["next"].flatMap { $0.hasPrefix("/") && !$0.hasPrefix("//") ? $0 : nil } ?? "/"
            var response = Response.redirect(to: next, type: .found)
            response.setCookie(Cookie(name: cookieName, value: token, path: "/", httpOnly: true, sameSite: .strict))
            return response
        }
    }
}
