/**
 * A sample SOAP service (the demo's, the soap handler's tests' and bench/soap.ts's): the `soap`
 * npm package (a development dependency) serving a WSDL (document/literal, an Orders service)
 * on loopback, SOAP 1.1 at /ws/orders and SOAP 1.2 (its forceSoap12Headers) at /ws/orders12;
 * GET /ws/orders?wsdl returns the WSDL. CreateOrder echoes what it parsed (so a test sees what
 * the service understood), a customer "bad" gets a client fault, "crash" a server fault, "slow"
 * an answer after 2 s. The raw request bodies it received are kept (the last 1,000 at least).
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as soap from 'soap';

export const ORDERS_NS = 'http://example.com/orders';
export const CREATE_ACTION = 'http://example.com/orders/CreateOrder';

const wsdl = (binding: 'soap' | 'soap12', path: string) => `<?xml version="1.0" encoding="UTF-8"?>
<definitions name="Orders" targetNamespace="${ORDERS_NS}"
  xmlns="http://schemas.xmlsoap.org/wsdl/"
  xmlns:soap="http://schemas.xmlsoap.org/wsdl/${binding === 'soap' ? 'soap/' : 'soap12/'}"
  xmlns:tns="${ORDERS_NS}" xmlns:xsd="http://www.w3.org/2001/XMLSchema">
  <types>
    <xsd:schema targetNamespace="${ORDERS_NS}" elementFormDefault="qualified">
      <xsd:complexType name="Item">
        <xsd:sequence>
          <xsd:element name="sku" type="xsd:string"/>
          <xsd:element name="qty" type="xsd:string"/>
        </xsd:sequence>
      </xsd:complexType>
      <xsd:element name="CreateOrder">
        <xsd:complexType>
          <xsd:sequence>
            <xsd:element name="customer" type="xsd:string"/>
            <xsd:element name="item" type="tns:Item" minOccurs="0" maxOccurs="unbounded"/>
            <xsd:element name="note" type="xsd:string" minOccurs="0"/>
          </xsd:sequence>
        </xsd:complexType>
      </xsd:element>
      <xsd:element name="CreateOrderResponse">
        <xsd:complexType>
          <xsd:sequence>
            <xsd:element name="orderId" type="xsd:string"/>
            <xsd:element name="customer" type="xsd:string"/>
            <xsd:element name="note" type="xsd:string" minOccurs="0"/>
            <xsd:element name="line" type="tns:Item" minOccurs="0" maxOccurs="unbounded"/>
          </xsd:sequence>
        </xsd:complexType>
      </xsd:element>
    </xsd:schema>
  </types>
  <message name="CreateOrderInput"><part name="parameters" element="tns:CreateOrder"/></message>
  <message name="CreateOrderOutput"><part name="parameters" element="tns:CreateOrderResponse"/></message>
  <portType name="OrdersPortType">
    <operation name="CreateOrder">
      <input message="tns:CreateOrderInput"/>
      <output message="tns:CreateOrderOutput"/>
    </operation>
  </portType>
  <binding name="OrdersBinding" type="tns:OrdersPortType">
    <soap:binding style="document" transport="http://schemas.xmlsoap.org/soap/http"/>
    <operation name="CreateOrder">
      <soap:operation soapAction="${CREATE_ACTION}"/>
      <input><soap:body use="literal"/></input>
      <output><soap:body use="literal"/></output>
    </operation>
  </binding>
  <service name="OrdersService">
    <port name="OrdersPort" binding="tns:OrdersBinding">
      <soap:address location="http://localhost${path}"/>
    </port>
  </service>
</definitions>`;

interface CreateOrder {
  customer: string;
  item?: { sku: string; qty: string } | { sku: string; qty: string }[];
  note?: string;
}

export interface SoapService {
  url: string;
  /** Raw request bodies and headers, in order (the last 1,000 to 2,000). */
  received: { body: string; headers: Record<string, string | string[] | undefined> }[];
  /** CreateOrder calls the service executed. */
  executed: () => number;
  close(): Promise<void>;
}

export async function startSoapService(port = 0, host = '127.0.0.1'): Promise<SoapService> {
  const received: SoapService['received'] = [];
  let executed = 0;
  const fault12 = (value: string, text: string) => ({
    Fault: { Code: { Value: `soap:${value}` }, Reason: { Text: text }, statusCode: 500 },
  });
  const fault11 = (code: string, text: string) => ({
    Fault: { faultcode: `soap:${code}`, faultstring: text, detail: { trace: 'internal stack trace' } },
  });
  const ops = (v12: boolean) => ({
    OrdersService: {
      OrdersPort: {
        CreateOrder: async (args: CreateOrder) => {
          executed++;
          if (args.customer === 'bad')
            throw v12
              ? fault12('Sender', 'unknown customer: bad')
              : fault11('Client', 'unknown customer: bad');
          if (args.customer === 'crash')
            throw v12 ? fault12('Receiver', 'database down') : fault11('Server', 'database down');
          if (args.customer === 'slow') await new Promise((r) => setTimeout(r, 2000));
          const items = args.item === undefined ? [] : Array.isArray(args.item) ? args.item : [args.item];
          return {
            orderId: `o-${executed}`,
            customer: args.customer,
            ...(args.note !== undefined && { note: args.note }),
            line: items.map((i) => ({ sku: i.sku, qty: i.qty })),
          };
        },
      },
    },
  });
  const server: Server = createServer((_req, res) => {
    res.writeHead(404).end();
  });
  server.listen(port, host);
  await once(server, 'listening');
  const log = (type: string, data: unknown, req: IncomingMessage) => {
    if (type !== 'received') return;
    received.push({ body: String(data), headers: req.headers });
    if (received.length > 2000) received.splice(0, 1000);
  };
  const s11 = soap.listen(server, {
    path: '/ws/orders',
    services: ops(false),
    xml: wsdl('soap', '/ws/orders'),
  });
  s11.log = log;
  const s12 = soap.listen(server, {
    path: '/ws/orders12',
    services: ops(true),
    xml: wsdl('soap12', '/ws/orders12'),
    forceSoap12Headers: true,
  });
  s12.log = log;
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${bound}`,
    received,
    executed: () => executed,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}
